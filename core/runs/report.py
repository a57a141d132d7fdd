"""cached_runs/REPORT.md: our tables beside the paper's, and the orderings the paper claims, checked.

Every number comes from the finished runs under a folder (the sweep plans' runs); nothing is typed in by hand
except the paper's own figures quoted for comparison. Each comparison is judged beyond test-set noise (see
ppl_outcome and bleu_outcome): it "holds", "FAILS" (the other way round, beyond noise) or is "within noise". An
ordering is "reproduced" only when every comparison it names holds, "not reproduced" when one fails, "not shown"
when none fails but some are within noise, and "no runs" when a side is missing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import (
    OLD_TEACHER_LOSS,
    OLD_TEACHER_LOSS_NOTE,
    ONE_CANDIDATE_NOTE,
    VARIANT_FIELDS,
    ablation_label,
    effective_hash,
    preset_value,
    varied_settings,
)
from core.runs.compare import NotComparableError, PerplexityComparison, compare_runs, compare_runs_bleu
from core.runs.store import RunDir, base_models_note, is_synth, plainest_first
from core.runs.values import as_float
from core.synth.config import synth_other_settings

# The paper's Table 1 (AirDialog, sample-level, epsilon 3): PPL, BLEU-4. Quoted for scale only: our corpus,
# model and data sizes differ, so only orderings are compared.
PAPER_TABLE1_AIRDIALOG = {
    "pub-gpt": (63.16, 0.10),
    "pub-gpt+pseudo": (19.39, 0.25),
    "noisysgd": (17.49, 0.96),
    "noisysgd+pseudo": (16.78, 1.09),
    "noisysgd-gc+pseudo": (11.17, 1.54),
}


@dataclass(frozen=True)
class Row:
    """One finished run, flattened to what the tables need."""

    name: str
    preset: str
    method: str
    epsilon: float  # the target asked for (inf for references)
    spent: float | None  # the epsilon its privacy.json records (computed by core.privacy from its events)
    target: str
    ablation: str
    filter: str
    teachers: int
    partition: str
    batching: str
    canaries: str
    ppl: float
    bleu4: float
    metrics: dict
    privacy: dict
    path: Path
    seed: int = 0


def other_settings(cfg: dict) -> dict[str, Any]:
    """The settings of a run config that differ from its preset's default outside those the tables vary
    (core.config.VARIANT_FIELDS): another corpus, query budget or learning rate has no place in them."""
    return {k: v for k, v in varied_settings(cfg).items() if k not in VARIANT_FIELDS}


def load_rows(folder: Path) -> list[Row]:
    """Finished runs; several plans share a config (e.g. SeqPATE at epsilon 3): each config counts once, configs
    that differ only in fields their method never reads included (core.config.effective_hash). Runs that change a
    setting no table varies are left out (set_aside_runs names them): a run on another corpus stood in for the
    preset's Pub-GPT, and one with another query budget in App. H's teacher curve."""
    rows, seen = [], set()
    # of copies of one config, the plainest name counts (tiny-seqpate-eps3, not -ablationnone), as on the pages
    for path in sorted((p for p in Path(folder).iterdir() if p.is_dir()), key=lambda p: plainest_first(p.name)):
        run = RunDir(path, source="cached")
        if not run.is_complete():
            continue
        stored = run.config() or {}
        cfg = stored.get("config") or {}
        key = effective_hash(cfg) if cfg else stored.get("config_hash")
        if key in seen or is_synth(stored) or other_settings(cfg):
            continue
        seen.add(key)
        metrics, privacy = run.metrics() or {}, run.privacy() or {}
        sp, dp, pr, data = cfg["seqpate"], cfg["dpsgd"], cfg["privacy"], cfg["data"]
        rows.append(Row(
            name=path.name, preset=cfg["preset"], method=cfg["method"], epsilon=float(pr["epsilon"]),
            spent=as_float(privacy.get("epsilon")), target=pr.get("target", "sample"),
            ablation=sp["ablation"], filter=sp["filter"], teachers=int(sp["teachers"]),
            partition=sp["partition"], batching=dp["batching"], canaries=data.get("canaries", ""),
            ppl=float(metrics["ppl"]), bleu4=float(metrics["bleu4"]), metrics=metrics, privacy=privacy, path=path,
            seed=int(cfg.get("seed", stored.get("seed", 0))),
        ))
    return sorted(rows, key=lambda row: row.name)


@dataclass(frozen=True)
class SynthRow:
    name: str
    preset: str
    generator: str
    epsilon: float  # target
    spent: float | None
    metrics: dict
    seed: int = 0


def load_synth_rows(folder: Path) -> list[SynthRow]:
    rows = []
    for path in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        run = RunDir(path, source="cached")
        if not run.is_complete():  # first: an unfinished run's config.json may not parse
            continue
        stored = run.config() or {}
        if not is_synth(stored) or synth_other_settings(stored["config"]):
            continue
        cfg = stored["config"]
        rows.append(SynthRow(name=path.name, preset=cfg["preset"], generator=cfg["synth"]["generator"],
                             epsilon=float(cfg["privacy"]["epsilon"]), spent=as_float((run.privacy() or {}).get("epsilon")),
                             metrics=run.metrics() or {}, seed=int(cfg.get("seed", stored.get("seed", 0)))))
    return rows


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf"
        return f"{value:.{digits}f}"
    return str(value)


def table(header: list[str], body: Iterable[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in body]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------------
# Selections: which runs belong to which experiment (by config, not by name)
# ----------------------------------------------------------------------------------------------------------------


def preset_filter(preset: str) -> str:
    """The student's candidate filter at the preset's defaults (quick's was chosen on public validation)."""
    return preset_value(preset, "seqpate", "filter")


def is_plain(r: Row) -> bool:
    """A run of the trade-off plan: default switches, sample-level target, no canaries."""
    seqpate_defaults = r.method != "seqpate" or (
        r.ablation == "none" and r.filter == preset_filter(r.preset) and r.partition == "random")
    return seqpate_defaults and r.target == "sample" and not r.canaries and r.batching == "samples"


def pick(rows: list[Row], **want) -> list[Row]:
    return [r for r in rows if all(getattr(r, k) == v for k, v in want.items())]


def one(rows: list[Row], **want) -> Row | None:
    found = pick(rows, **want)
    return found[0] if found else None


def default_teachers(rows: list[Row]) -> int | None:
    """The teacher count Tables 3 and 4 compare at: the preset's where a plain SeqPATE run has it, else the most
    common among them (a folder with one run at the preset's M and one at M = 1 tied, and the tie chose M = 1)."""
    seq = [r for r in rows if r.method == "seqpate" and is_plain(r)]
    presets_m = {preset_value(r.preset, "seqpate", "teachers") for r in seq}
    if len(presets_m) == 1 and (m := presets_m.pop()) in {r.teachers for r in seq}:
        return m
    counts = [r.teachers for r in seq]
    return max(set(counts), key=counts.count) if counts else None


def noise_dominance(std: float | None, teachers: float | None) -> str:
    """Why SeqPATE's answers carry almost no signal where its noise std on a sum of M teacher distributions exceeds M:
    the clause REPORT.md and the dashboard's tables share. '' where the noise does not dominate (or is unknown)."""
    if std is None or not teachers or not math.isfinite(std) or not std / teachers > 1:
        return ""
    return (f"the noise std is {std:.1f} on a sum of M = {teachers:.0f} teacher distributions (std / M = "
            f"{std / teachers:.1f}, against at most 1 for any candidate's average probability), so the teachers "
            "carry almost no signal")


def noise_dominance_note(rows: list[Row]) -> str:
    """Where the preset's SeqPATE at epsilon 3 is noise-dominated (noise_dominance), a sentence saying so: its
    orderings among SeqPATE variants at that M (Tables 3 and 4, and App. H's rows with fewer teachers than the noise
    std) then reflect the student's own losses and the noise, not what the teachers know. '' otherwise."""
    m = default_teachers(rows)
    seq3 = one([r for r in first_seed(rows) if is_plain(r)], method="seqpate", epsilon=3.0, teachers=m) if m else None
    std = as_float((seq3.privacy if seq3 else {}).get("noise_scale"))
    if seq3 is None or not (why := noise_dominance(std, seq3.teachers)):
        return ""
    return (f"SeqPATE's answers here are noise-dominated: at epsilon 3 {why} through it. The orderings among "
            f"SeqPATE's own variants below (Tables 3 and 4, and App. H's rows with M below {std:.0f}) then reflect "
            "the student's losses and the noise, not what the teachers know.")


# ----------------------------------------------------------------------------------------------------------------
# Orderings the paper claims
# ----------------------------------------------------------------------------------------------------------------


HOLDS, FAILS, WITHIN_NOISE = "holds", "FAILS", "within noise"
# Runs written before test_nll.csv existed keep only their corpus PPL. For them a PPL difference under 2% is called
# noise: the paired 95% intervals of quick runs that kept per-sentence NLL were +-0.3% (1,000 test sentences,
# SeqPATE vs Pub-GPT); tiny scores 200 sentences, and less similar models differ more sentence by sentence.
PPL_NOISE_MARGIN = 0.02


@dataclass(frozen=True)
class Claim:
    text: str
    checks: list[tuple[str, str]]  # (what was compared, HOLDS / FAILS / WITHIN_NOISE)

    @property
    def verdict(self) -> str:
        outcomes = {outcome for _, outcome in self.checks}
        if not outcomes:
            return "no runs"
        if outcomes == {HOLDS}:
            return "reproduced"
        return "not reproduced" if FAILS in outcomes else "not shown (within test-set noise)"


def paired_ppl(a: Row, b: Row) -> PerplexityComparison | None:
    """a's test perplexity over b's with its 95% paired bootstrap interval, or None when the two runs did not both
    keep per-sentence NLL on the same test sentences."""
    try:
        return compare_runs(RunDir(a.path, source="cached"), RunDir(b.path, source="cached"), n_resamples=2000)
    except NotComparableError:
        return None


def ppl_outcome(a: Row, b: Row) -> tuple[str, str]:
    """Is a's test perplexity lower than b's beyond test-set noise? (outcome, the evidence in words)

    A paired bootstrap interval of the PPL ratio when both runs kept per-sentence NLL on the same test sentences,
    else the fixed PPL_NOISE_MARGIN."""
    c = paired_ppl(a, b)
    if c is None:
        ratio = a.ppl / b.ppl
        outcome = HOLDS if ratio < 1 - PPL_NOISE_MARGIN else FAILS if ratio > 1 + PPL_NOISE_MARGIN else WITHIN_NOISE
        return outcome, f"PPL ratio {ratio:.3f} (±{PPL_NOISE_MARGIN:.0%}): {outcome}"
    outcome = {"A is lower": HOLDS, "B is lower": FAILS}.get(c.verdict, WITHIN_NOISE)
    return outcome, f"PPL ratio {c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]: {outcome}"


def bleu_outcome(a: Row, b: Row) -> tuple[str, str]:
    """Is a's BLEU-4 higher than b's beyond test-set noise? sacrebleu's paired approximate randomization test on
    the completions of the same test prefixes (p < 0.05)."""
    try:
        c = compare_runs_bleu(RunDir(a.path, source="cached"), RunDir(b.path, source="cached"), trials=2000)
    except (NotComparableError, ValueError, KeyError, TypeError) as exc:
        return WITHIN_NOISE, f"BLEU-4 not testable ({exc}): {WITHIN_NOISE}"
    outcome = {"A is higher": HOLDS, "B is higher": FAILS}.get(c.verdict, WITHIN_NOISE)
    evidence = "BLEU-4 equal" if c.bleu_a == c.bleu_b else f"BLEU-4 p = {c.p_value:.2f}"
    return outcome, f"{evidence}: {outcome}"


def combined(outcomes: Iterable[str]) -> str:
    """All must hold; one failure fails the comparison."""
    outcomes = set(outcomes)
    return HOLDS if outcomes == {HOLDS} else FAILS if FAILS in outcomes else WITHIN_NOISE


def compare(a: Row | None, b: Row | None, bleu: bool = True) -> list[tuple[str, str]]:
    """a beats b: lower perplexity and (when bleu) higher BLEU-4, each beyond test-set noise (the paper claims
    both for Table 1, perplexity alone for Tables 3-4 and App. H)."""
    if a is None or b is None:
        return []
    judged = [ppl_outcome(a, b)] + ([bleu_outcome(a, b)] if bleu else [])
    evidence = "; ".join(text for _, text in judged)
    return [(f"{a.name} (PPL {a.ppl:.1f}, BLEU-4 {a.bleu4:.2f}) vs {b.name} (PPL {b.ppl:.1f}, "
             f"BLEU-4 {b.bleu4:.2f}): {evidence}", combined(outcome for outcome, _ in judged))]


def by_seed(rows: list[Row]) -> dict[int, list[Row]]:
    """The runs of each seed, lowest seed first."""
    return {seed: [r for r in rows if r.seed == seed] for seed in sorted({r.seed for r in rows})}


def claims(rows: list[Row]) -> list[Claim]:
    """The orderings, judged in every seed that has their runs, each seed on its own (a seed is another user split,
    base model, teacher partition and noise draw; runs are only compared within one): a claim is reproduced only
    when it holds in each. With several seeds each comparison is labelled with its seed."""
    judged = {seed: seed_claims(seed_rows) for seed, seed_rows in by_seed(rows).items()}
    if len(judged) < 2:
        return next(iter(judged.values()), None) or seed_claims([])
    checks: dict[str, list[tuple[str, str]]] = {}  # claim text -> every seed's comparisons, in claim order
    for seed, seed_result in judged.items():
        for claim in seed_result:
            checks.setdefault(claim.text, []).extend((f"seed {seed}: {what}", outcome) for what, outcome in claim.checks)
    return [Claim(text, found) for text, found in checks.items()]


def first_seed(rows: list[Row]) -> list[Row]:
    """The runs of the lowest seed: the tables quote one seed, never a mix."""
    return next(iter(by_seed(rows).values()), [])


def seed_claims(rows: list[Row]) -> list[Claim]:
    """Every ordering, judged on the runs of one seed."""
    plain = [r for r in rows if is_plain(r)]
    m = default_teachers(rows)
    seq3 = one(plain, method="seqpate", epsilon=3.0, teachers=m) if m else None
    out = []
    checks = []
    for base in ("noisysgd", "noisysgd+pseudo", "noisysgd-gc+pseudo", "pub-gpt", "pub-gpt+pseudo"):
        eps = math.inf if base.startswith("pub") else 3.0
        other = one(plain, method=base, epsilon=eps) if eps == 3.0 else one(plain, method=base)
        checks += compare(seq3, other)
    out.append(Claim("Table 1: at epsilon 3 SeqPATE beats every DP baseline and the public references "
                     "(lower PPL and higher BLEU-4)", checks))

    pri = one(plain, method="pri-gpt")
    out.append(Claim("Table 1: Pri-GPT (no protection) is the upper bound: better than SeqPATE at epsilon 3",
                     compare(pri, seq3)))
    out.append(Claim("Table 1: pseudo data helps: Pub-GPT+pseudo beats Pub-GPT",
                     compare(one(plain, method="pub-gpt+pseudo"), one(plain, method="pub-gpt"))))

    abl = [r for r in rows if r.method == "seqpate" and r.epsilon == 3.0 and r.ablation != "none"
           and r.target == "sample" and not r.canaries and r.teachers == m and r.filter == preset_filter(r.preset)
           and r.partition == "random"]
    out.append(Claim("Table 3: the full method beats each ablation at epsilon 3 (lower PPL)",
                     [c for a in abl for c in compare(seq3, a, bleu=False)]))

    filt = [r for r in rows if r.method == "seqpate" and r.epsilon == 3.0 and r.ablation == "none"
            and r.target == "sample" and not r.canaries and r.teachers == m and r.partition == "random"]
    top_p = next((r for r in filt if r.filter == "top-p:0.95"), None)
    out.append(Claim("Table 4: top-p 0.95 beats every top-k candidate filter at epsilon 3 (lower PPL)",
                     [c for k in filt if k.filter.startswith("top-k") for c in compare(top_p, k, bleu=False)]))

    teach = sorted((r for r in rows if r.method == "seqpate" and r.epsilon == 3.0 and r.ablation == "none"
                    and r.filter == preset_filter(r.preset) and r.target == "sample" and not r.canaries
                    and r.partition == "random"), key=lambda r: r.teachers)
    out.append(Claim("App. H: more teachers is better at epsilon 3 (PPL falls as M grows)",
                     [c for a, b in zip(teach[1:], teach[:-1], strict=False)
                      for c in compare(a, b, bleu=False)]))

    checks = []
    for eps in (3.0, 5.0):
        s = one(rows, method="seqpate", epsilon=eps, target="phrase-avg")
        for batching in ("samples", "users"):
            checks += compare(s, one(rows, method="noisysgd-gc+pseudo", epsilon=eps, target="phrase-avg",
                                     batching=batching))
    out.append(Claim("Table 2: at the same AVERAGE phrase epsilon (3 and 5) SeqPATE with the by-user partition "
                     "beats NoisySGD-GC+pseudo with sample batches and with user batches", checks))
    return out


# ----------------------------------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------------------------------


def tradeoff_section(rows: list[Row]) -> str:
    plain = [r for r in rows if is_plain(r)]
    m = default_teachers(rows)
    eps_values = sorted({r.epsilon for r in plain if math.isfinite(r.epsilon) and r.method != "pri-gpt"})
    body = []
    for method in ("pub-gpt", "pub-gpt+pseudo", "pri-gpt"):
        r = one(plain, method=method)
        if r:
            body.append([method, "0" if method.startswith("pub") else "inf (none)", r.ppl, r.bleu4]
                        + list(PAPER_TABLE1_AIRDIALOG.get(method, (None, None))))
    for method in ("seqpate", "noisysgd", "noisysgd+pseudo", "noisysgd-gc+pseudo"):
        for eps in eps_values:
            want = {"teachers": m} if method == "seqpate" else {}
            r = one(plain, method=method, epsilon=eps, **want)
            if r:
                paper = PAPER_TABLE1_AIRDIALOG.get(method, (None, None)) if eps == 3.0 else (None, None)
                body.append([method, f"{eps:g} (spent {fmt(r.spent)})", r.ppl, r.bleu4, *paper])
    return "## Privacy-utility trade-off (Table 1, Fig. 2)\n\n" + table(
        ["method", "epsilon", "PPL", "BLEU-4", "paper PPL (AirDialog, eps 3)", "paper BLEU-4"], body)


# Table 1's methods, and ADP (seed 002) beside them as on the dashboard's Overview
SEED_TABLE_METHODS = ("pub-gpt", "pub-gpt+pseudo", "pri-gpt", "seqpate", "noisysgd", "noisysgd+pseudo",
                      "noisysgd-gc+pseudo", "adp")


def seeds_section(rows: list[Row]) -> str:
    """Table 1 (and ADP) in every seed (only when several ran): each run's perplexity over Pub-GPT's of the same
    seed, with its 95% paired bootstrap interval, so a reader sees whether a gap survives another seed. SeqPATE
    appears at every epsilon it ran with the default teachers (the no-signal and noise-free controls beside
    epsilon 3)."""
    seeds = by_seed(rows)
    body = []
    for seed, seed_rows in seeds.items():
        plain = [r for r in seed_rows if is_plain(r)]
        m, pub = default_teachers(plain), one(plain, method="pub-gpt")
        for method in SEED_TABLE_METHODS:
            if method.startswith(("pub", "pri")):
                found, eps = pick(plain, method=method)[:1], "0" if method.startswith("pub") else "inf (none)"
            elif method == "seqpate":
                found, eps = sorted(pick(plain, method=method, teachers=m), key=lambda r: r.epsilon), None
            else:
                found, eps = pick(plain, method=method, epsilon=3.0)[:1], None
            body += [[seed, method, eps or r.epsilon, r.ppl, r.bleu4, ppl_ratio_to(r, pub), r.name] for r in found]
    first = next(iter(seeds), None)  # the seed the other tables quote (first_seed)
    later_seeds = [seed for seed in dict.fromkeys(row[0] for row in body) if seed != first]
    if not later_seeds or first not in {row[0] for row in body}:  # a second seed of variants only repeats nothing
        return ""
    later = " and ".join(filter(None, [", ".join(map(str, later_seeds[:-1])), str(later_seeds[-1])]))
    return ("## Table 1 in every seed\n\n"
            f"The other tables quote seed {first}; these runs repeat Table 1 (and ADP, seed 002) with "
            f"seed{'s' * (len(later_seeds) > 1)} "
            f"{later} (another user split, base model, teacher partition and noise draw). PPL / Pub-GPT is against "
            "Pub-GPT of the same seed, with the 95% paired bootstrap interval over the test sentences.\n\n"
            + table(["seed", "method", "epsilon", "PPL", "BLEU-4", "PPL / Pub-GPT", "run"], body))


def ppl_ratio_to(run: Row, reference: Row | None) -> str:
    if reference is None or run is reference:
        return "-"
    c = paired_ppl(run, reference)
    return f"{run.ppl / reference.ppl:.3f}" if c is None else f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]"


def seqpate_section(rows: list[Row]) -> str:
    m = default_teachers(rows)
    parts = []
    abl = sorted((r for r in rows if r.method == "seqpate" and r.epsilon == 3.0 and r.target == "sample"
                  and not r.canaries and r.teachers == m and r.filter == preset_filter(r.preset)
                  and r.partition == "random"), key=lambda r: r.ablation)
    if abl:
        labels = [ablation_label(r.ablation, r.metrics) for r in abl]
        parts.append("## Ablations at epsilon 3 (Table 3)\n\n" + table(
            ["ablation", "PPL", "BLEU-4", "queries spent", "epsilon spent"],
            [[label, r.ppl, r.bleu4, r.metrics.get("queries_spent"), r.spent]
             for label, r in zip(labels, abl, strict=True)])
            + ("\n\n" + OLD_TEACHER_LOSS_NOTE if any(OLD_TEACHER_LOSS in label for label in labels) else ""))
    filt = sorted((r for r in rows if r.method == "seqpate" and r.epsilon == 3.0 and r.ablation == "none"
                   and r.target == "sample" and not r.canaries and r.teachers == m and r.partition == "random"),
                  key=lambda r: (r.filter.startswith("top-k"), as_float(r.filter.split(":")[1]) or 0))
    if filt:
        parts.append("## Candidate filtering at epsilon 3 (Table 4)\n\n" + table(
            ["filter", "PPL", "BLEU-4", "queries spent"],
            [[r.filter, r.ppl, r.bleu4, r.metrics.get("queries_spent")] for r in filt])
            + ("\n\n" + ONE_CANDIDATE_NOTE if any(r.filter == "top-k:1" for r in filt) else ""))
    teach = sorted((r for r in rows if r.method == "seqpate" and r.epsilon == 3.0 and r.ablation == "none"
                    and r.filter == preset_filter(r.preset) and r.target == "sample" and not r.canaries
                    and r.partition == "random"), key=lambda r: r.teachers)
    if teach:
        parts.append("## Number of teachers at epsilon 3 (App. H)\n\n" + table(
            ["teachers", "PPL", "BLEU-4", "noise std", "teacher phase (s)"],
            [[r.teachers, r.ppl, r.bleu4, r.privacy.get("noise_scale"),
              (r.metrics.get("seqpate_timings") or {}).get("teachers_s")] for r in teach])
            # a config several plans ran shows its plainest copy, which may come from another sweep than its row's
            # neighbours (tiny's M = 10: 140.0 s against the teachers sweep's own copy's 90.6 s)
            + "\n\nTeacher phase: wall-clock seconds as each run measured them. The runs were made at different "
              "times, some beside other jobs on the same cores, so read the column as rough; `benchmarks/` times "
              "the teacher phase on an otherwise idle machine.")
    return "\n\n".join(parts)


def phrase_section(rows: list[Row]) -> str:
    chosen = sorted((r for r in rows if r.canaries), key=lambda r: (r.method, r.epsilon, r.batching))
    if not chosen:
        return ""
    body = []
    for r in chosen:
        everything = r.metrics.get("phrase_summary") or {}
        s = (everything.get("by_kind") or {}).get("name") or everything  # phrase-avg calibrates over names
        exp = r.metrics.get("exposure") or {}
        label = r.method + (" (batching users)" if r.batching == "users" else "") + (
            " by-user" if r.method == "seqpate" and r.partition == "by-user" else "")
        target = "none" if r.method.startswith("pri-gpt") else f"{r.target} {fmt(r.epsilon)}"
        body.append([label, target, r.ppl, r.bleu4, s.get("avg"), s.get("min"), s.get("max"),
                     s.get("share_below_avg"), everything.get("share_at_or_below_sample"), everything.get("max"),
                     r.metrics.get("r_name"), exp.get("1"), exp.get("10"), exp.get("100")])
    return ("## Secret phrases, leak rate and canary exposure (Table 2, Table 6, Table 13, App. O)\n\n"
            "Phrase epsilon: SeqPATE with sensitivity sqrt(2) n_s; DP-SGD by group privacy over the phrase's "
            "occurrences; batching users by the batches holding it. avg / min / max / share are over users' name "
            "phrases (what `phrase-avg` calibrates); the canaries are measuring devices, their largest epsilon "
            "(the 100x canary) is in 'max, all'; 'all <= sample' is the share of ALL phrases (names and canaries) "
            "whose epsilon is at or below the run's sample-level epsilon. Exposure of the canaries inserted 1, 10 and 100 times (log2 of "
            "10^6 candidates, 19.93, is the maximum). A `phrase-avg` run, as in the paper's Table 2, chooses its "
            "noise from how many teachers or sentences hold each name, private counts no accountant covers: its "
            "epsilons are a heuristic comparison, not a DP guarantee (its statement.md).\n\n"
            + table(["method", "target", "PPL", "BLEU-4", "name eps avg", "min", "max", "share <= avg",
                     "all <= sample", "max, all", "R_name", "exposure 1x", "10x", "100x"], body)
            + ("\n\n" + note if (note := base_models_note([(r.name, (r.metrics.get("base_model") or {})
                                                                   .get("weights_sha256")) for r in chosen])) else ""))


def adp_section(rows: list[Row]) -> str:
    # the canary runs (the phrases plan's) have their row in the phrase table
    chosen = sorted((r for r in rows if (r.method in ("adp",) or (r.name.startswith("adp-") or "-adp-" in r.name))
                     and not r.canaries), key=lambda r: (r.epsilon, r.method))
    if not chosen:
        return ""
    return ("## Adaptive DP-SGD (seed 002)\n\nADP is calibrated so that its accounted epsilon (every step accounted "
            "at the smallest noise any batch got, min(gamma_B) x sigma) equals the target; the epsilon the paper's recipe would claim is shown beside it. "
            "Even the accounted epsilon is optimistic: the noise level is chosen from the private sentences' own "
            "perplexity, a dependence no accountant covers, so ADP is a heuristic, not a DP guarantee. At one "
            "accounted epsilon every ADP step adds at least plain DP-SGD's noise (its smallest multiplier is "
            "NoisySGD's, the others up to max/min gamma_B times that), so here ADP cannot beat NoisySGD by "
            "construction; the claimed epsilon is what the paper's accounting (every step at the mean multiplier) "
            "would claim for the noise this run added.\n\n"
            + table(["method", "target eps", "accounted eps", "claimed eps (paper recipe)", "PPL", "BLEU-4"],
                    [[r.method, r.epsilon, r.spent, r.privacy.get("epsilon_claimed"), r.ppl, r.bleu4]
                     for r in chosen]))


SYNTH_GENERATORS = ("filter", "pplm", "multitask")


def accuracy_difference_se(a: float, b: float, n: int) -> float:
    """Standard error of the difference of two accuracies, each measured on n test texts (binomial, treated as
    independent: conservative for two classifiers scored on the same texts)."""
    return math.sqrt((a * (1 - a) + b * (1 - b)) / n)


def lead_beyond_noise(name_a: str, a: float | None, name_b: str, b: float | None, what: str,
                      n_test: int | None) -> tuple[str, str]:
    """'A's accuracy a vs B's b (margin)' and whether A leads (HOLDS) or trails (FAILS) by more than two standard
    errors of the difference."""
    line = f"{name_a} {what} {fmt(a, 3)} vs {name_b} {fmt(b, 3)}"
    if a is None or b is None:
        return line, FAILS
    margin = 2 * accuracy_difference_se(a, b, n_test) if n_test else 0.0
    if n_test:
        line += f" (two standard errors of the difference on {n_test} test texts: {margin:.3f})"
    return line, HOLDS if a - b > margin else FAILS if b - a > margin else WITHIN_NOISE


def above_chance(name: str, value: float | None, what: str, n_labels: int, n_test: int) -> tuple[str, str]:
    """'A's accuracy vs chance (margin)': HOLDS above 1 / n_labels (balanced test texts) by more than two binomial
    standard errors at chance, FAILS below it by as much, else WITHIN_NOISE."""
    chance = 1 / n_labels
    margin = 2 * math.sqrt(chance * (1 - chance) / n_test)
    line = (f"{name} {what} {fmt(value, 3)} vs chance {chance:.3f} ({n_labels} labels; two standard errors on "
            f"{n_test} test texts: {margin:.3f})")
    if value is None:
        return line, FAILS
    return line, HOLDS if value - chance > margin else FAILS if chance - value > margin else WITHIN_NOISE


def synth_claims(rows: list[SynthRow]) -> list[Claim]:
    """Seed 004, Fig. 1-2: at epsilon 3 the multitask generator's synthetic data trains a better classifier than
    the filter baseline's, and its embeddings separate the labels better than the frozen (LM-only) model's. Both
    are accuracies on the real test texts, so a lead counts only beyond two standard errors: the test sets are
    small (separability is cross-validated over the same texts, each predicted once). The multitask side must also
    be above chance: a lead of one classifier at chance over another below it shows nothing about the method.

    Every seed run for both generators is a comparison of its own (a seed is another split of users, base model,
    labelled texts and noise), so the claim is reproduced only when it holds in every seed."""
    def at3(generator: str, seed: int) -> SynthRow | None:
        return next((r for r in rows if r.generator == generator and r.epsilon == 3.0 and r.seed == seed), None)

    acc, sep = [], []
    for seed in sorted({r.seed for r in rows}):
        multi, filt = at3("multitask", seed), at3("filter", seed)
        if not (multi and filt):
            continue
        n_test = (multi.metrics.get("data") or {}).get("test")
        n_test = int(n_test) if n_test else None
        acc.append(lead_beyond_noise(multi.name, multi.metrics.get("accuracy_synthetic"), filt.name,
                                     filt.metrics.get("accuracy_synthetic"), "accuracy", n_test))
        sep.append(lead_beyond_noise(multi.name, multi.metrics.get("separability"), f"frozen-model {filt.name}",
                                     filt.metrics.get("separability"), "separability", n_test))
        n_labels = len((multi.metrics.get("data") or {}).get("labels") or [])
        if n_test and n_labels > 1:
            acc.append(above_chance(multi.name, multi.metrics.get("accuracy_synthetic"), "accuracy", n_labels, n_test))
            sep.append(above_chance(multi.name, multi.metrics.get("separability"), "separability", n_labels, n_test))
        else:  # an older or hand-made metrics.json: the check cannot be made, so the claim cannot be reproduced
            unknown = (f"{multi.name}: chance level unknown (metrics.json names no labels or test count)",
                       WITHIN_NOISE)
            acc.append(unknown)
            sep.append(unknown)
    return [Claim("Seed 004 Fig. 1: at epsilon 3 the multitask generator's synthetic data gives a higher real-test "
                  "accuracy than the filter baseline's", acc),
            Claim("Seed 004 Fig. 2: at epsilon 3 the multitask model's embeddings separate the labels better than "
                  "the frozen (LM-only) model's", sep)]


def synth_section(rows: list[SynthRow]) -> str:
    if not rows:
        return ""
    order = sorted(rows, key=lambda r: (SYNTH_GENERATORS.index(r.generator) if r.generator in SYNTH_GENERATORS
                                        else 9, -r.epsilon, r.seed))
    body = [[r.generator, r.epsilon, r.seed, r.spent, r.metrics.get("accuracy_synthetic"),
             r.metrics.get("accuracy_real"), r.metrics.get("separability"), (r.metrics.get("ngram_ratios") or {}).get("3"),
             (r.metrics.get("ngram_ratios") or {}).get("7")] for r in order]
    lines = ["## DP synthetic labelled text (seed 004)", "",
             "Where several seeds ran (each another split of users, base model, labelled texts and noise), every seed "
             "is judged on its own, and a claim is reproduced only when it holds in each.", ""]
    lines += [f"- **{c.verdict}**: {c.text}" + "".join(f"\n  - {outcome}: {what}" for what, outcome in c.checks)
              for c in synth_claims(rows)]
    lines += ["", "Classifier (TF-IDF + logistic regression) trained on the synthetic set, tested on real held-out "
              "text; `real` is the same classifier trained on the real train set. Separability: random-forest "
              "accuracy on the model's mean embeddings by label. n-gram ratio: share of synthetic n-grams found in "
              "the training data.", "",
              table(["generator", "target eps", "seed", "spent eps", "accuracy (synthetic)", "accuracy (real)",
                     "separability", "3-gram ratio", "7-gram ratio"], body)]
    return "\n".join(lines)


def set_aside_runs(folder: Path) -> list[str]:
    """'NAME (setting value, ...)' of every finished run here that changes a setting none of the report's tables
    varies (other_settings, synth_other_settings), so load_rows and load_synth_rows leave it out."""
    out = []
    for path in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        run = RunDir(path, source="cached")
        if run.is_complete():
            stored = run.config() or {}
            cfg = stored.get("config") or {}
            if other := (synth_other_settings(cfg) if is_synth(stored) else other_settings(cfg)):
                out.append(f"{run.run_id} ({', '.join(f'{k} {v}' for k, v in other.items())})")
    return out


def left_out_runs(folder: Path) -> list[str]:
    """'NAME (reason)' of every run folder here that is not a finished run (the report reads finished ones)."""
    runs = [RunDir(path, source="cached") for path in sorted(Path(folder).iterdir()) if path.is_dir()]
    return [f"{run.run_id} ({reason})" for run in runs if run.exists() and (reason := run.incomplete_reason())]


def build_report(folder: Path, notes: str = "", notes_path: Path | None = None) -> str:
    all_rows = load_rows(folder)
    synth_rows = load_synth_rows(folder)
    presets = sorted({r.preset for r in all_rows} | {r.preset for r in synth_rows},
                     key=["tiny", "quick", "paper"].index)
    lines = [
        "# Reproduction report",
        "",
        f"Generated by `python -m core report --runs {folder}"
        + (f" --notes {notes_path}" if notes_path else "") + f"` from {len(all_rows) + len(synth_rows)} finished "
        f"runs (distinct configs; presets: {', '.join(presets) or '-'}). Every number below is read from the runs' "
        "metrics.json and privacy.json; the paper's figures are quoted for scale only (different corpus, model size and data size). "
        "Runs are only compared within a preset.",
        "",
        "A comparison counts only beyond test-set noise. Perplexity: `PPL ratio r [low, high]` is the 95% paired "
        "bootstrap interval over the test sentences when both runs kept test_nll.csv for the same sentences; "
        "`PPL ratio r (±2%)` marks the other pairs (runs written before that file existed), where a difference "
        "under 2% is called noise. BLEU-4: `p` of sacrebleu's "
        "paired approximate randomization test on the two runs' completions of the same test prefixes (p < 0.05; "
        "2,000 shuffles here, 10,000 in `python -m core compare`, so the two p can differ by about 0.01). "
        "Neither covers training randomness: where runs of several seeds exist (another user split, base model and "
        "noise), each seed is judged on its own, and an ordering is reproduced only when it holds in every seed that "
        "has its runs (each comparison names its seed).",
        "",
    ]
    if left_out := left_out_runs(folder):  # a damaged run would otherwise leave its rows out without a trace
        lines += ["Left out, not finished runs: " + "; ".join(left_out) + ".", ""]
    if set_aside := set_aside_runs(folder):
        lines += ["Left out, runs that change a setting none of these tables varies (they are experiments of their "
                  "own: compare them with `python -m core compare`): " + "; ".join(set_aside) + ".", ""]
    for preset in presets:
        rows = [r for r in all_rows if r.preset == preset]
        synth = [r for r in synth_rows if r.preset == preset]
        lines += [f"# Preset `{preset}` ({len(rows) + len(synth)} runs)", ""]
        if rows:
            lines += ["## Orderings the paper claims", ""]
            if note := noise_dominance_note(rows):
                lines += [note, ""]
        for c in claims(rows) if rows else []:
            lines.append(f"- **{c.verdict}**: {c.text}")
            lines += [f"  - {outcome}: {what}" for what, outcome in c.checks]
        lines.append("")
        one_seed = first_seed(rows)
        for section in (tradeoff_section(one_seed), seeds_section(rows), seqpate_section(one_seed),
                        phrase_section(one_seed), adp_section(one_seed), synth_section(synth)):
            if section:
                lines += [section, ""]
    if notes.strip():
        lines += ["# Notes", "", notes.strip(), ""]
    return "\n".join(lines)


def write_report(folder: Path, notes_path: Path | None = None) -> Path:
    try:
        notes = notes_path.read_text(encoding="utf-8") if notes_path and notes_path.is_file() else ""
    except UnicodeDecodeError as exc:  # said "'utf-8' codec can't decode byte 0xff", naming no file
        raise ValueError(f"notes {notes_path}: not UTF-8 text (byte {exc.start})") from None
    out = Path(folder) / "REPORT.md"
    out.write_text(build_report(Path(folder), notes, notes_path if notes else None), encoding="utf-8")
    return out
