"""PPI++ mean against the ppi-python reference implementation."""

from __future__ import annotations

import numpy as np
import pytest

from polyjudge.data.errors import InputError
from polyjudge.validation.ppi import ppi_mean

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python (test-only reference) is not installed")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("binary", [True, False])
def test_matches_ppi_python(seed, binary):
    r = np.random.default_rng(seed)
    n, N = 60, 600
    truth = r.random(n + N) < 0.3
    pred = np.where(r.random(n + N) < 0.8, truth, ~truth).astype(float)
    if not binary:
        pred = np.clip(pred * 0.7 + r.normal(0, 0.1, n + N), 0, 1)
    Y, Yhat, Yu = truth[:n].astype(float), pred[:n], pred[n:]
    ours = ppi_mean(Y, Yhat, Yu, alpha=0.1)
    lo, hi = ppi_py.ppi_mean_ci(Y, Yhat, Yu, alpha=0.1)
    est = ppi_py.ppi_mean_pointestimate(Y, Yhat, Yu)
    assert ours.estimate == pytest.approx(float(np.ravel(est)[0]), abs=1e-10)
    assert ours.lower == pytest.approx(float(np.ravel(lo)[0]), abs=1e-10)
    assert ours.upper == pytest.approx(float(np.ravel(hi)[0]), abs=1e-10)
    assert 0 <= ours.lam <= 1


def test_fixed_lambda_and_classical():
    r = np.random.default_rng(9)
    Y = (r.random(50) < 0.4).astype(float)
    Yhat = Y.copy()
    Yu = (r.random(500) < 0.4).astype(float)
    zero = ppi_mean(Y, Yhat, Yu, lam=0.0)
    assert zero.estimate == pytest.approx(Y.mean()) and zero.lower == pytest.approx(zero.classical_lower)
    one = ppi_mean(Y, Yhat, Yu, lam=1.0)
    lo, hi = ppi_py.ppi_mean_ci(Y, Yhat, Yu, alpha=0.1, lam=1.0)
    assert one.estimate == pytest.approx(Yu.mean())  # perfect predictions on labelled items
    assert (one.lower, one.upper) == pytest.approx((float(np.ravel(lo)[0]), float(np.ravel(hi)[0])))
    # a perfect predictor narrows the interval
    assert one.upper - one.lower < zero.upper - zero.lower


def test_errors():
    with pytest.raises(InputError):
        ppi_mean([1.0], [1.0], [0.0, 1.0])
    with pytest.raises(InputError):
        ppi_mean([1.0, 0.0], [1.0, 0.0], [0.0, 1.0], alpha=0)
