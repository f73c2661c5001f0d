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
