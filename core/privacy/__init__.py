"""Privacy accounting: pure math, no torch (tests enforce it, so the dashboard can import it cheaply).

events      mechanisms recorded as data (privacy.json `events`)
accountant  the one place where events become (epsilon, delta), naming the accountant used
calibrate   noise from a budget, before the first release, never overshooting it
phrases     epsilon per secret phrase for SeqPATE, DP-SGD and DP-SGD with batched users
"""

from core.privacy.accountant import (
    ACCOUNTANT_BASIC_LAPLACE,
    ACCOUNTANT_EXACT_GAUSSIAN,
    ACCOUNTANT_NONE,
    ACCOUNTANT_NOT_PRIVATE,
    ACCOUNTANT_PLD,
    PrivacyReport,
    delta_for_epsilon,
    epsilon_from_events,
    gaussian_delta,
    gaussian_epsilon,
)
from core.privacy.calibrate import (
    SEQPATE_L1_SENSITIVITY,
    SEQPATE_L2_SENSITIVITY,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    epsilon_for_gaussian,
    gaussian_noise_multiplier,
    gaussian_std,
    laplace_scale,
    per_release_noise_multiplier,
    poisson_rate,
    poisson_shape,
)
from core.privacy.events import (
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SubsampledGaussianEvent,
    event_from_dict,
    events_from_dicts,
    events_to_dicts,
)
from core.privacy.phrases import (
    calibrate_for_average,
    dpsgd_phrase_epsilon,
    dpsgd_phrase_group_events,
    group_release,
    seqpate_phrase_epsilon,
    summarize_phrase_epsilons,
    user_batched_phrase_epsilon,
)

__all__ = [
    "ACCOUNTANT_BASIC_LAPLACE",
    "ACCOUNTANT_EXACT_GAUSSIAN",
    "ACCOUNTANT_NONE",
    "ACCOUNTANT_NOT_PRIVATE",
    "ACCOUNTANT_PLD",
    "GaussianEvent",
    "LaplaceEvent",
    "PrivacyEvent",
    "PrivacyReport",
    "SEQPATE_L1_SENSITIVITY",
    "SEQPATE_L2_SENSITIVITY",
    "SubsampledGaussianEvent",
    "calibrate_for_average",
    "delta_for_epsilon",
    "dpsgd_epsilon",
    "dpsgd_noise_multiplier",
    "dpsgd_phrase_epsilon",
    "dpsgd_phrase_group_events",
    "epsilon_for_gaussian",
    "epsilon_from_events",
    "event_from_dict",
    "events_from_dicts",
    "events_to_dicts",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_noise_multiplier",
    "gaussian_std",
    "laplace_scale",
    "per_release_noise_multiplier",
    "poisson_rate",
    "poisson_shape",
    "group_release",
    "seqpate_phrase_epsilon",
    "summarize_phrase_epsilons",
    "user_batched_phrase_epsilon",
]
