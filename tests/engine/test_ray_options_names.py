"""``RayOptions`` names the cluster's address as the setting does (issue 44 item 1: one vocabulary): the flag
``--ray-address``, the study key ``ray_address``, ``JudgeConfig(ray_address=...)`` and ``RayOptions.ray_address``."""

from __future__ import annotations

import dataclasses

from polyjudge.data.settings import get
from polyjudge.engine.ray_executor import RayOptions


def test_the_ray_address_field_is_named_as_its_setting():
    names = {f.name for f in dataclasses.fields(RayOptions)}
    assert get("ray_address").name in names and "address" not in names
    options = RayOptions(ray_address="ray://head:10001")
    assert options.ray_address == options.address == "ray://head:10001"  # the 0.2 name still reads it


def test_every_field_that_is_a_setting_has_the_settings_name():
    """Each ``--ray-*`` setting of the execution group is a field of RayOptions by its own name (``ray_actors``,
    not ``actors``), and the options the command line builds carry the values given by those names."""
    from polyjudge.data.settings import of_group

    names = {f.name for f in dataclasses.fields(RayOptions)}
    ray_settings = {s.name for s in of_group("execution") if s.name.startswith("ray_")}
    assert ray_settings <= names, sorted(ray_settings - names)
    assert not names & {"actors", "cpus_per_actor", "gpus_per_actor", "runtime_env", "connect_timeout_s",
                        "show_ray_logs"}
    options = RayOptions(ray_actors=3, ray_cpus_per_actor=0.5, ray_gpus_per_actor=1.0, ray_connect_timeout=5.0,
                         ray_logs=True, ray_runtime_env={"pip": ["x"]})
    options.check()
    assert (options.ray_actors, options.ray_cpus_per_actor, options.ray_connect_timeout) == (3, 0.5, 5.0)
