"""core.privacy must never pull in torch (directly, via opacus, or lazily when computing)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import core.privacy as p
p.epsilon_from_events([p.GaussianEvent(10.0, 1.4, 100), p.SubsampledGaussianEvent(1.0, 0.01, 10)], 1e-5)
p.gaussian_noise_multiplier(3.0, 1e-6, 10)
p.epsilon_from_events([p.LaplaceEvent(1.0, 2.0, 3)], 1e-6)
p.dpsgd_phrase_epsilon(1.0, 0.01, 10, 2, 1e-5)
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'opacus', 'tensorflow', 'jax'))
print(','.join(bad))
"""


def test_core_privacy_does_not_import_torch():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "", f"core.privacy imported: {out.stdout.strip()}"
