"""A run's privacy statement in plain language (statement.md): what is protected, how strongly, and what is not.

Built only from what the run recorded (privacy.json, metrics, the phrase table's info), so it can be rebuilt at
any time by `python -m core audit`.
"""

from __future__ import annotations

import math
from typing import Any

from core.analysis.phrases import (
    KIND_DPSGD,
    KIND_NOT_PRIVATE,
    KIND_PUBLIC,
    KIND_SEQPATE,
    KIND_USER_BATCHES,
    mechanism_kind,
)
from core.config import fixed_epsilon, heuristic_reason, shared_noise_streams

PUBLIC_METHODS = ("pub-gpt", "pub-gpt+pseudo")

# Which change to one sentence the epsilon covers, per mechanism. SeqPATE's teacher partition and the fixed user
# batches are computed from the data's shape, so their sensitivity holds for neighbours that keep that shape: the
# sentence's content is removed but its place stays (the "zero-out" relation of Kairouz et al. 2021), or, for SeqPATE,
# replaced by any other sentence (one teacher's distribution moves the same bounded amount either way). Poisson-sampled
# DP-SGD is accounted for adding or removing a sentence (dp_accounting's default).
def neighbours(kind: str, mechanism: str = "gaussian") -> tuple[str, str]:
    """(the change the epsilon covers, what neighbouring data sets are and what stays public)."""
    if kind == KIND_SEQPATE:
        moves = "2 in L1 (Laplace noise)" if mechanism == "laplace" else "sqrt(2) in L2"
        return ("removing its content or replacing it by any other sentence",
                "the data with that sentence's content removed, or replaced by any other sentence, while every "
                f"other sentence keeps its teacher (one teacher's data changes, so its next-token distribution moves "
                f"by at most {moves}). The partition is computed from the data's shape (how many sentences and, with "
                "the by-user partition, which user wrote each): that shape is treated as public, not protected.")
    if kind == KIND_USER_BATCHES:
        return ("removing its content",
                "the data with that sentence's content removed while it keeps its place in the fixed batches "
                "(zero-out neighbours, Kairouz et al. 2021): one batch's clipped gradient sum moves by at most C. "
                "Replacing it by another sentence is two such changes (sensitivity 2C). The batches are computed "
                "from which user wrote each sentence: that mapping is treated as public, not protected.")
    if kind == KIND_DPSGD:
        return ("adding or removing it",
                "the data with that sentence added or removed (Poisson sampling: each sentence joins each step's "
                "batch independently). The number of sentences, which sets the sampling rate and the step count, "
                "is treated as public, as usual for DP-SGD.")
    return ("changing it", "not determined for this run's mechanism; privacy.json lists its events.")


def privacy_labels(cfg) -> dict[str, Any]:
    """Labels privacy.json carries beside the accounted epsilon: the privacy target and, where the noise level was
    chosen from the private data, why that epsilon is a heuristic (read alone, the file would pass for a guarantee)."""
    if fixed_epsilon(cfg.method) is not None:  # public-only or unprotected: the privacy settings are never read
        return {}
    reason = heuristic_reason(cfg.method, cfg.privacy.target, cfg.privacy.epsilon)
    return {"target": cfg.privacy.target, **({"heuristic": reason} if reason else {})}


# Every mechanism here draws its noise and sampling from generators seeded with the run's seed, for reproducibility;
# so two runs of one seed share their standard-normal draws, which composition assumes independent.
SEEDED_NOISE = ("- Randomness: the noise and the sampling were drawn from pseudo-random generators seeded with the "
                "run's seed (config.json), so the run can be reproduced; whoever knows that seed can, with the code, "
                "re-derive the pseudo-random streams the noise was drawn from, and against them the epsilon does "
                "not hold: it assumes noise they cannot predict. Runs with the same seed on the same data draw the "
                "same noise, only "
                "scaled: a sweep over epsilon at one seed, as the shipped runs are, and the methods of one mechanism "
                "at one seed (DP-SGD's variants and ADP; the filter and PPLM generators), with the same batches "
                "where their batch sizes agree. Composition assumes independent "
                "noise, so no epsilon covers two such runs released together. Before a model trained here, or "
                "anything generated from it, leaves the lab, train it with a secret seed of its own and keep its "
                "config.json private.")

KIND_SYNTH = "synthetic-data"  # a synthetic-data run's DP-Adam (synth_statement; not a mechanism_kind of text runs)


SHARED_HEADLINE = ("Its noise replayed numbers drawn elsewhere in the run (see \"Made before the noise had random "
                   "streams of its own\" below), so what follows is what its noise level would give were the noise "
                   "independent: ")


def shared_stream_lines(method: str, kind: str, privacy: dict[str, Any], seed: int, teachers: int = 0) -> list[str]:
    """What a run made before its mechanism drew from streams of its own (core.privacy.streams; its privacy.json
    has no `random_streams`) shared its noise with, where core.config.shared_noise_streams says it shared any."""
    if not shared_noise_streams(method, privacy, seed, teachers):
        return []
    if kind == KIND_SEQPATE:
        shared = "its noise was drawn from the numbers that ordered teacher 7's training batches (numpy, seed 7)"
    elif kind in (KIND_DPSGD, KIND_USER_BATCHES):
        what = "Poisson batches and noise were" if kind == KIND_DPSGD else "noise was"
        shared = (f"its {what} drawn from torch's generator seeded with the run's seed, as the public models "
                  "it starts from had been: the base model's training (its dropout, and its initial weights where "
                  "seeded) and, for a method that warms up on pseudo data, their sampling and that warm-up")
    elif kind == KIND_SYNTH:
        shared = ("its Poisson batches and noise were drawn from torch's generator seeded with the run's seed, as "
                  "the public base model's training had been and the discriminator head's initial weights were "
                  "(both part of the released model), and the random tokens with which the head scores the samples "
                  "came from the same seed")
    else:
        return []
    return [f"- Made before the noise had random streams of its own (2026-11-27): {shared}. The epsilon assumes "
            "the noise and the sampling independent of everything else the run releases, so for this run it is a "
            "measurement at its noise level, not a proven bound, even with a secret seed; a rerun draws them from "
            "streams of their own (core.privacy.streams)."]


# Wall-clock time is measured, not noised: how long a private step took depends on the private data.
TIMED_FILES = ("each line's time in progress.jsonl and (a job's) log.txt, the start, progress and end times in "
               "status.json and the durations in metrics.json")
TIMED_BY_KIND = {
    KIND_SEQPATE: "how long each teacher's share of the sentences is",
    KIND_DPSGD: "how many sentences each sampled batch holds, and how long they are",
    KIND_USER_BATCHES: "how long the sentences of each batch are",
}


def timing_channel(kind: str) -> str:
    """The statement's line on the run's times, a side channel no epsilon covers."""
    depends = TIMED_BY_KIND.get(kind, "how many and how long the sentences are")
    return (f"- Timing: {TIMED_FILES} measure how long the private computations took, which depends on the private "
            f"data ({depends}). No epsilon covers that side channel; it is coarse, but drop the times before handing "
            "a run's files to someone the epsilon is meant to hold against.")


def _num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        if math.isnan(x):
            return "n/a"
        if math.isinf(x):
            return "infinite" if x > 0 else "-infinite"
        return f"{x:.{digits}g}"
    return str(x)


def _pct(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def privacy_statement(
    cfg,
    privacy: dict[str, Any],
    metrics: dict[str, Any],
    phrase_info: dict[str, Any] | None = None,
    run_id: str = "",
    has_test_nll: bool = True,
) -> str:
    """statement.md of a text-generation run: what is protected and how strongly, the secret phrases' epsilons,
    and the empirical checks (leak rate, canary exposure). has_test_nll: the run keeps test_nll.csv (every run
    made since 2026-11-23 does)."""
    kind = mechanism_kind(cfg.method, privacy)
    lines = [f"# Privacy statement: {run_id or 'run'} ({cfg.method})", ""]
    lines += _guarantee_lines(cfg, privacy, kind, has_test_nll)
    lines += base_model_lines(cfg.model.source)
    lines += _phrase_lines(cfg, privacy, metrics, phrase_info or {}, kind)
    lines += _empirical_lines(metrics)
    lines += ["", "Completions and phrases.csv quote private text; share them as you would the private data.", ""]
    return "\n".join(lines)


def base_model_lines(source: str) -> list[str]:
    """Where the run starts from a GPT-2 checkout (--model): the bench cannot know what that model was trained on,
    and every statement above takes it, like the public text, as public. [] for the tiny model trained here on the
    public side of the data."""
    if source == "tiny":
        return []
    return ["", f"- Base model: the GPT-2 checkout at {source}, taken as public. Whatever it was trained "
                "on, private text included, is outside this run's epsilon: the bench cannot tell what that was."]


def adp_mechanism_line(privacy: dict[str, Any]) -> str:
    """ADP's noise multiplier changes every step (gamma_t times a base sigma); every step is accounted at the
    smallest, which its recorded event holds. Runs made before 2026-11-27 recorded the base sigma as
    noise_multiplier (up to ~100 times the noise any step added) and no range of per-step multipliers."""
    events = privacy.get("events") or [{}]
    accounted = events[0].get("noise_multiplier")
    base = privacy.get("base_sigma", privacy.get("noise_multiplier"))
    low, high = privacy.get("noise_multiplier_range") or (accounted, None)
    largest = f", the largest {_num(high, 4)}" if high is not None else ""
    return (f"- Mechanism: DP-SGD with Poisson sampling (rate {_num(privacy.get('sampling_rate'), 4)}), "
            "per-sentence gradient clipping and Gaussian noise whose multiplier changes every step: gamma_t "
            f"(in (0, 1], from the batch's perplexities) times a base sigma of {_num(base, 4)}. Every step is "
            f"accounted at the smallest multiplier any step used, {_num(low, 4)}{largest}, over "
            f"{privacy.get('steps')} steps.")


def _guarantee_lines(cfg, privacy: dict[str, Any], kind: str, has_test_nll: bool = True) -> list[str]:
    """## What is protected, and how strongly."""
    lines = ["## What is protected, and how strongly", ""]
    if cfg.method == "pri-gpt-blacklist":
        return lines + BLACKLIST_LINES
    if kind == KIND_PUBLIC or cfg.method in PUBLIC_METHODS:
        return lines + _public_lines(tiny=cfg.model.source == "tiny")
    if kind == KIND_NOT_PRIVATE:
        return lines + NOT_PRIVATE_LINES
    heuristic = heuristic_reason(cfg.method, cfg.privacy.target, cfg.privacy.epsilon) is not None
    lines += _bound_lines(cfg, privacy, kind, heuristic)
    lines += _mechanism_lines(cfg, privacy, kind)
    lines.append(evaluation_outside(has_test_nll))
    if cfg.method == "adp":
        lines += _adp_caveat_lines(privacy)
    if heuristic and cfg.privacy.target == "phrase-avg":
        lines += PHRASE_AVG_LINES
    return lines


BLACKLIST_LINES = [
    "**Protected unit: none (no formal guarantee).** The model is Pri-GPT, fine-tuned on the private "
    "training data without noise; its completions have the private users' names (whole, in any case) and "
    "blacklisted words (other names and places absent from public text, digit strings, month names found "
    "in the private training set) replaced.",
    "",
    "What the blacklist does NOT give (SeqPATE App. P):",
    "- it only covers the listed types of item (names, places, digit strings, dates);",
    "- even for those types it only removes the items that were found: the list is finite, and a name "
    "spelled differently or split over tokens passes through, as does any other item not capitalised;",
    "- the model itself still memorises the private data: anyone with the weights, or with access to "
    "its probabilities (as the canary exposure below measures), gets around the filter;",
    "- its strength cannot be measured: there is no epsilon. The epsilon recorded (infinite) says so.",
]

NOT_PRIVATE_LINES = [
    "**Not private.** The model was trained on the private data without noise (epsilon infinite): "
    "nothing bounds what it reveals about any sentence, user or phrase. Expect memorisation: the name "
    "leak rate and canary exposure below show how much.",
]

PHRASE_AVG_LINES = [
    "",
    "**Calibrated for the average phrase epsilon: a heuristic, not a DP guarantee** (privacy.target = "
    "phrase-avg). The noise was chosen so that the AVERAGE epsilon over the users' name phrases hits "
    "the target, as in the paper's Table 2. That choice reads private statistics (how many teachers "
    "or sentences hold each name), and the noise level it picks is released (privacy.json, "
    "progress.jsonl): two data sets that differ in one sentence can get different noise. Every "
    "epsilon in this statement is computed as if that noise level had been fixed in advance, so it "
    "holds only where those counts are public; otherwise no accountant covers the choice. For a "
    "guarantee, use a run calibrated for the sample (privacy.target = sample).",
]


def _public_lines(tiny: bool) -> list[str]:
    """A run on public data only; a checkout's own training is beyond what the run can know (base_model_lines)."""
    return [
        f"**Protected unit: none needed.** {'This model' if tiny else 'This run'} never trained "
        f"{'' if tiny else 'the model '}on private data (public text and pseudo data completed from public "
        f"prefixes only{'' if tiny else '; what the checkout it starts from was trained on is below'}), so "
        f"{'' if tiny else 'with the checkout taken as public, '}nothing about any private user is released "
        "through it: epsilon = 0 by convention (paper footnote 8).",
        "",
        "Private test sentences are still used to evaluate it (perplexity, completions), and the evaluation "
        "files quote them.",
    ]


def _bound_lines(cfg, privacy: dict[str, Any], kind: str, heuristic: bool) -> list[str]:
    """The (epsilon, delta) bound, the unit it protects and what it is about. A heuristic noise level (chosen from
    the private data: ADP, a phrase-avg target) or noise replaying another stream's numbers is said in its first
    line: a reader who stops there must not take it as proven."""
    eps, delta = privacy.get("epsilon"), privacy.get("delta")
    unit = privacy.get("unit", "sample")
    change, relation = neighbours(kind, str(privacy.get("mechanism", "gaussian")))
    shared = shared_noise_streams(cfg.method, privacy, cfg.seed, cfg.seqpate.teachers)
    return [
        f"**Protected unit: one {unit if unit != 'sample' else 'sentence (sample)'}"
        + (", as a heuristic, not a DP guarantee.** Its noise level was chosen from the private data (see "
           "below), so the bound that follows holds only as far as that choice is public: "
           if heuristic else f", as a measurement, not a proven bound.** {SHARED_HEADLINE}" if shared
           else ".** ")
        + f"(epsilon, delta) = ({_num(eps, 4)}, {_num(delta)}): for any one private training sentence, "
        f"{change} changes the probability of anything this run released by at most a factor "
        f"e^epsilon = {_num(math.exp(eps) if isinstance(eps, (int, float)) and eps < 700 else math.inf)}, "
        "plus an added probability delta.",
        f"- Accountant: {privacy.get('accountant', 'n/a')}. The epsilon is recomputed from the recorded mechanism "
        "events (privacy.json), not typed in.",
        f"- Neighbouring data sets: {relation}",
        "- Which data set: the private training set as prepared (core.data.prepare: the private users' "
        "sentences shuffled with the run's seed and cut to size). That selection is made without privacy, so "
        "the guarantee is about the prepared set: a sentence put into or taken out of the raw corpus can "
        "change which other sentences were selected.",
        SEEDED_NOISE,
        *shared_stream_lines(cfg.method, kind, privacy, cfg.seed, cfg.seqpate.teachers),
        timing_channel(kind),
    ]


def _mechanism_lines(cfg, privacy: dict[str, Any], kind: str) -> list[str]:
    """"- Mechanism: ..." of a SeqPATE, DP-SGD, ADP or batching-users run (none for another kind)."""
    if kind == KIND_SEQPATE:
        return [
            f"- Mechanism: {privacy.get('mechanism', 'gaussian')} noise with scale "
            f"{_num(privacy.get('noise_scale'), 5)} on the sum of the {privacy.get('teachers', cfg.seqpate.teachers)} teachers' "
            "next-token distributions over the student's candidates (their votes in the voting ablation), "
            "fixed before the "
            f"first query for a budget of {privacy.get('query_budget')} queries; "
            f"{privacy.get('queries_spent')} answers were released. One sentence sits in one teacher's data, "
            "so it moves one teacher's distribution: sensitivity "
            + ("2 in L1" if privacy.get("mechanism") == "laplace" else "sqrt(2)") + " per answer.",
        ]
    if kind == KIND_DPSGD and cfg.method == "adp":
        return [adp_mechanism_line(privacy)]
    if kind == KIND_DPSGD:
        return [
            f"- Mechanism: DP-SGD with Poisson sampling (rate {_num(privacy.get('sampling_rate'), 4)}), "
            f"per-sentence gradient clipping{_clip_norm(privacy)} and Gaussian noise (multiplier "
            f"{_num(privacy.get('noise_multiplier'), 4)}) over {privacy.get('steps')} steps.",
        ]
    if kind == KIND_USER_BATCHES:
        releases = sum(e.get("count") for e in privacy.get("events") or []
                       if isinstance(e, dict) and isinstance(e.get("count"), int))
        steps = f" ({privacy['steps']} steps)" if isinstance(privacy.get("steps"), int) else ""
        return [
            "- Mechanism: DP-SGD with fixed batches that keep each user's sentences together (\"batching "
            f"users\", App. M), per-sentence gradient clipping{_clip_norm(privacy)} and Gaussian noise "
            f"(multiplier {_num(privacy.get('noise_multiplier'), 4)}) on each batch's summed gradient{steps}. "
            "A sentence sits in one batch per epoch, so it is in one Gaussian release per epoch"
            + (f" ({releases} here)" if releases else "") + ", composed exactly; no subsampling amplification.",
        ]
    return []


def _adp_caveat_lines(privacy: dict[str, Any]) -> list[str]:
    """ADP's own caveat (privacy.json's statement) and what its released statistics of private data mean."""
    return ["", "**ADP caveat.** " + str(privacy.get("statement", "")).strip(),
            f"- The ADP paper's own accounting would claim epsilon "
            f"{_num(privacy.get('epsilon_claimed'), 4)}; that number is not a guarantee.",
            "- metrics.json (the rho and gamma summaries), the base sigma and the range of per-step noise "
            "multipliers (the run's log, and privacy.json since 2026-11-27) are statistics of the private "
            "sentences' perplexities, released outside any epsilon. With them the run's files carry no "
            "DP guarantee at any epsilon: rho is normalised between the lowest and highest perplexity of "
            "the private set, so adding or removing one sentence at either end can move every rho, and with "
            "them the base sigma, many-fold."]


def _clip_norm(privacy: dict[str, Any]) -> str:
    """" to norm C" where the run recorded its clipping norm."""
    norm = privacy.get("max_grad_norm")
    return f" to norm {_num(norm, 4)}" if isinstance(norm, (int, float)) and not isinstance(norm, bool) else ""


def evaluation_outside(has_test_nll: bool) -> str:
    """A private LM run's evaluation reads private test sentences, held out of training, so outside its epsilon."""
    losses = "the per-sentence losses (test_nll.csv), " if has_test_nll else ""
    return ("- Outside the epsilon: the model is evaluated on private test sentences, which it never trained on, so "
            "the epsilon above does not cover them. The test perplexity and BLEU (metrics.json), " + losses +
            "the completions of private test prefixes beside their true continuations (completions.jsonl) and the "
            "name leak counts are computed from those sentences without noise, and any secret-phrase counts "
            "(phrases.csv) from the private training set. Share them as you would the private data.")


def _phrase_lines(cfg, privacy: dict[str, Any], metrics: dict[str, Any], info: dict[str, Any],
                  kind: str) -> list[str]:
    """## Secret phrases (phrases.csv): their epsilons, and how the method protects a repeated phrase."""
    method = cfg.method
    lines: list[str] = []
    summary = metrics.get("phrase_summary") or {}
    lines += ["", "## Secret phrases (phrases.csv)", ""]
    lines += [
        "A secret phrase is a private user's name (found where users introduce themselves, or the customer "
        "name of a dialogue) or an inserted canary (\"my ID is <number>\"). Each row of phrases.csv gives how "
        "many private training sentences contain it (occurrences), how many users wrote those sentences, how many "
        "SeqPATE teachers saw them (SeqPATE runs only), and the epsilon at which this run protects the phrase as a whole, i.e. all "
        "its occurrences together, at the same delta. A phrase repeated in many sentences is protected less than "
        "one sentence: that is group privacy. phrases.csv quotes private text (the names).",
        "",
    ]
    if summary.get("count") and (kind == KIND_NOT_PRIVATE or method == "pri-gpt-blacklist"):
        lines += [f"All {summary['count']} phrases are unprotected (epsilon infinite)."]
    elif summary.get("count") and kind == KIND_PUBLIC:
        lines += [f"All {summary['count']} phrases have epsilon 0: the model never saw the private data."]
    elif summary.get("count"):
        lines += [
            f"Over {summary['count']} phrases: average epsilon {_num(summary.get('avg'))}, min "
            f"{_num(summary.get('min'))}, max {_num(summary.get('max'))}; {_pct(summary.get('share_below_avg'))} "
            f"of phrases at or below the average, {_pct(summary.get('share_at_or_below_sample'))} at or below the "
            f"sample-level epsilon {_num(summary.get('sample_epsilon'))}.",
        ]
        for k, sub in (summary.get("by_kind") or {}).items():
            lines.append(f"- {k} phrases: {sub.get('count')}, average {_num(sub.get('avg'))}, max "
                         f"{_num(sub.get('max'))}.")
    elif failed := {part: why for part, why in (info.get("errors") or {}).items() if part in ("secrets", "phrases")}:
        # the audit could not search or account them (audit_run records why): not "none found"
        lines += [f"The secret phrases were not computed ({part}: {why})." for part, why in failed.items()]
    else:
        lines += ["No secret phrase was found in the private training sentences of this run."]
    if kind == KIND_SEQPATE or (method == "seqpate" and kind == KIND_NOT_PRIVATE):
        part = cfg.seqpate.partition
        hist = privacy.get("teachers_per_user") or {}
        per_teacher = "2" if privacy.get("mechanism") == "laplace" else "sqrt(2)"  # L1 for Laplace noise
        if part == "by-user":
            lines += [
                "",
                "SeqPATE with the by-user partition puts each user's data into as few teachers as possible "
                f"(users in 1/2/3/>3 teachers: {hist.get('1')}/{hist.get('2')}/{hist.get('3')}/{hist.get('>3')}). "
                "A phrase only one user writes is then held by one or two teachers, and a phrase held by n_s "
                f"teachers has sensitivity {per_teacher} * n_s: with n_s = 1 it gets exactly the sample-level epsilon, "
                "however often the user repeats it (Sec. 5.3, App. D, F).",
            ]
        else:
            lines += [
                "",
                "SeqPATE with the random partition spreads a phrase's sentences over teachers at random: a phrase "
                "in n sentences is usually held by about min(n, teachers) teachers, each of which multiplies its "
                f"sensitivity ({per_teacher} * n_s). Partition by user to protect users' phrases at the sample level.",
            ]
        if info.get("partition_check") not in (None, "ok"):
            lines.append(f"- Partition check: {info['partition_check']}")
    elif kind == KIND_DPSGD:
        lines += ["", "DP-SGD protects a phrase only through group privacy: its epsilon grows quickly with the "
                  "number of sentences that contain it (two valid bounds, the smaller one taken, PLD accountant)."]
    elif kind == KIND_USER_BATCHES:
        lines += ["", "With batching users a phrase pays for every batch holding it, in every epoch: a user who fits "
                  "in one batch is protected like one sentence per epoch, but the epochs compose (App. M)."]
    if info.get("error"):
        lines.append(f"- Not computed: {info['error']}")
    return lines


def _empirical_lines(metrics: dict[str, Any]) -> list[str]:
    """## Empirical checks: the name leak rate and canary exposure (measurements, not guarantees)."""
    lines: list[str] = []
    lines += ["", "## Empirical checks (measurements, not guarantees)", ""]
    r = metrics.get("r_name")
    counts = metrics.get("r_name_counts") or {}
    if r is not None:
        lines.append(
            f"- Name leak rate R_name (App. O): {_pct(r)} of {counts.get('completions')} completions contain one "
            f"of {counts.get('names')} private users' names that occur in the training data."
        )
        bad = metrics.get("r_name_bad_case")
        if bad is not None:
            lines.append(f"- Bad case: of the {counts.get('references_with_name')} test sentences whose true "
                         f"continuation contains such a name, {_pct(bad)} of completions reproduce it.")
    exposure = metrics.get("exposure")
    if exposure:
        details = {str(d.get("inserted")): d for d in metrics.get("exposure_detail") or []}
        for count, value in exposure.items():
            d = details.get(str(count), {})
            how = d.get("method", "?")
            extra = (f", 95% interval {_num(d.get('exposure_low'))}..{_num(d.get('exposure_high'))}"
                     if how == "sampled" else "")
            lines.append(f"- Canary inserted {count}x: exposure {_num(value)} bits of a possible "
                         f"{_num(math.log2(d['candidates']) if d.get('candidates') else None)} "
                         f"({how} rank{extra}).")
        lines.append("  Exposure = log2|R| - log2(rank of the true number among all candidates by model "
                     "perplexity); about 1 bit means the model does not prefer it, log2|R| means it ranks first.")
    elif metrics.get("exposure_note"):
        lines.append(f"- Canary exposure: {metrics['exposure_note']}")
    if r is None and not exposure:
        lines.append("- none computed for this run.")
    return lines


# ------------------------------------------------------------------------------------------------------------
# Synthetic-data runs (core.synth)
# ------------------------------------------------------------------------------------------------------------


def synth_statement(synth: dict[str, Any], privacy: dict[str, Any], metrics: dict[str, Any], run_id: str = "",
                    base_model: str = "tiny") -> str:
    """statement.md of a synthetic-data run: what its epsilon covers, and what the run releases outside it.

    synth: the run's resolved SynthConfig as a dict (config.json's "synth"); base_model: its base config's
    model.source."""
    eps = privacy.get("epsilon")
    private = isinstance(eps, (int, float)) and math.isfinite(eps)
    chosen_here = synth.get("corpus", "chitchat") == "chitchat"  # the shipped corpus, whose settings were tuned on it
    lines = [f"# Privacy statement: {run_id or 'run'} (synth-{synth.get('generator', '?')})", "",
             "## What is protected, and how strongly", ""]
    lines += _synth_bound_lines(synth, privacy, metrics, chosen_here) if private else SYNTH_NOT_PRIVATE_LINES
    lines += base_model_lines(base_model)
    lines += _synth_outside_lines(private, chosen_here)
    return "\n".join(lines)


SYNTH_NOT_PRIVATE_LINES = [
    "**Not private.** The conditional model was fine-tuned on the private labelled training set without "
    "noise (epsilon infinite): nothing bounds what it, or the synthetic text sampled from it, reveals "
    "about any training sentence. The n-gram ratios in metrics.json show how much of the training text "
    "the samples repeat.",
]


def _synth_bound_lines(synth: dict[str, Any], privacy: dict[str, Any], metrics: dict[str, Any],
                       chosen_here: bool) -> list[str]:
    """The (epsilon, delta) bound of a private synthetic-data run, its DP-Adam mechanism and the data set it is
    about (drawn, balanced and split without privacy)."""
    eps, delta = privacy.get("epsilon"), privacy.get("delta")
    generator = synth.get("generator", "?")
    data = metrics.get("data") or {}
    counts = [data.get(key) if isinstance(data.get(key), dict) else {} for key in ("train_per_label", "test_per_label")]
    labels = data.get("labels") if isinstance(data.get("labels"), list) else []
    per_label = [sum(c.get(label) if isinstance(c.get(label), int) else 0 for c in counts)
                 for label in labels if isinstance(label, str)]
    balanced_count = per_label[0] if per_label and len(set(per_label)) == 1 else None  # what balancing kept
    stages = privacy.get("steps_by_stage") or {}
    head_steps = stages.get("discriminator_head", 0)
    return [
        "**Protected unit: one labelled training sentence (its text and label)"
        + (f", as a measurement, not a proven bound.** {SHARED_HEADLINE}"
           if shared_noise_streams(f"synth-{generator}", privacy, int(synth.get("seed", 0))) else ".** ")
        + "(epsilon, delta) = "
        f"({_num(eps, 4)}, {_num(delta)}): adding or removing any one sentence of the training set changes the "
        "probability of the fine-tuned model, and so of every sample generated from it (samples.jsonl, "
        f"completions.jsonl), by at most a factor e^epsilon = {_num(math.exp(eps) if eps < 700 else math.inf)}, "
        "plus an added probability delta.",
        f"- Accountant: {privacy.get('accountant', 'n/a')}. The epsilon is recomputed from the recorded "
        "mechanism events (privacy.json), not typed in.",
        f"- delta = 1/|train| = 1/{data.get('train', '?')}, the paper's setting, is a weak delta: a mechanism "
        "that publishes one random training sentence outright meets it. The usual advice is well below 1/n.",
        f"- Mechanism: DP-Adam with Poisson sampling (rate {_num(privacy.get('sampling_rate'), 4)}), each "
        f"sentence's gradient clipped to {_num(privacy.get('max_grad_norm'))}, Gaussian noise with multiplier "
        f"{_num(privacy.get('noise_multiplier'), 4)}, over {stages.get('lm', privacy.get('steps'))} fine-tuning "
        "steps"
        + (f" and {head_steps} steps training the discriminator head on the fine-tuned model's features"
           if head_steps else "")
        + "."
        + (f" Each fine-tuning step releases {privacy.get('releases_per_step')} gradients of its batch (language "
           "model and discriminator, each clipped on its own, the paper's Algorithm 1), each with noise of "
           f"standard deviation {_num(privacy.get('release_noise_multiplier'), 4)} times the clipping norm, "
           "accounted together as one release." if (privacy.get("releases_per_step") or 1) > 1 else ""),
        "- Neighbouring data sets: the training set with one sentence added or removed (Poisson sampling: each "
        "sentence joins each step's batch independently). The number of training sentences, which sets the "
        "sampling rate, the step count and delta, is treated as public.",
        "- Which data set: the training set is drawn from the labelled corpus without privacy: every label "
        "downsampled to the same count (the rarest label's count"
        + (f", at most {synth['per_label']}" if synth.get("per_label") else "")
        + (f"; here {balanced_count}" if balanced_count else "")
        + f"), then a seeded {round(100 * (1 - float(synth.get('test_fraction', 0.2))))}/"
        f"{round(100 * float(synth.get('test_fraction', 0.2)))} train/test split. Adding or removing one utterance "
        "of the corpus can move other utterances in or out of the training set, so the guarantee is about the "
        "training set as drawn. The label names (they head every sample in samples.jsonl), the rarest label's "
        "count and the per-label counts come from the private data without noise and are treated as public.",
        "- One sentence is the unit, not one person: a user who wrote k training sentences is protected only as "
        "a group of k (group privacy), at an epsilon that grows quickly with k"
        + ("; in the chitchat corpus a user writes many utterances." if chosen_here else "."),
        SEEDED_NOISE,
        *shared_stream_lines(f"synth-{generator}", KIND_SYNTH, privacy, int(synth.get("seed", 0))),
    ]


def _synth_outside_lines(private: bool, chosen_here: bool) -> list[str]:
    """What a synthetic-data run computes from the private data without noise, outside its epsilon."""
    return [
        "",
        "## Released outside the epsilon" if private else "## Other outputs computed from the private data",
        "",
        ("The epsilon covers the fine-tuned model and what is generated from it, nothing else. These outputs of "
         "the run are computed from the private data without noise:" if private else
         "Besides the model and its samples, these outputs of the run are computed from the private data:"),
        "- embeddings.csv: one 2-D point and its true label for every private test sentence (test sentences never "
        "enter training, so no epsilon covers them);",
        "- metrics.json: the reference classifier's accuracy and its agreement with the synthetic labels (trained "
        "without noise on the private training set), the n-gram ratios (synthetic against training n-grams, and "
        "test against training), the separability, discriminator accuracy and language-model loss on the private "
        "test sentences, the accuracy on the private test sentences of the classifier trained on the synthetic "
        "samples (accuracy_synthetic, also in progress.jsonl's last line and on the command's output), and the "
        "label counts;",
        "- the training loss per epoch (metrics.json, progress.jsonl), averaged over private batches;",
        f"- the times: {TIMED_FILES} measure how long the private computations took, which depends on the private "
        "data (how many sentences each sampled batch holds, and how long they are).",
        *(["- the presets' generation settings (PPLM's step size and step count, quick's base model) were chosen "
           "on scores measured without noise on a validation slice of this corpus's training texts "
           "(cached_runs/SYNTH_NOTES.md), texts the generator had been fine-tuned on: a choice made on the private "
           "data that no epsilon covers;",
           "- the four topics were picked partly for how many on-topic utterances private users wrote, counts of "
           "the private data that no epsilon covers either."]
          if chosen_here else []),
        "",
        "Share these files as you would the private data"
        + ("; share samples.jsonl under the guarantee above, which holds only while the run's seed stays secret "
           "(Randomness, above)." if private else "."),
        "",
    ]
