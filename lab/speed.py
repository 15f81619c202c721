"""Where bertlab's speed over transformers comes from: reading the record that
`lab/benchmarks/throughput.py --attribution` writes (data/benchmarks/*attribution*.json).

That record times bertlab's own training step with each of its levers switched on or off (the MLM
decoder at the chosen positions only, the last encoder layer there too, attention written out on a
CPU, bf16 autocast, torch.compile; records older than the last-layer lever have the other four)
and transformers' BertForPreTraining beside it. Two views answer two questions:

- *each alone*: starting from a step with none of the levers, how much faster does switching one
  on make it? (what a lever buys by itself)
- *each left out*: starting from bertlab's full step, how much slower does switching one off make
  it? (what the record's step owes to it; levers that help each other show up larger here)

The ratios are of tokens per second measured in one run on one machine, so they can be compared
with each other, never with another machine's.
"""

from __future__ import annotations

import json
from pathlib import Path

from bertlab.data.masking import default_max_predictions
from bertlab.prose import number

SHORT = {  # the levers' names in tables and sentences
    "sparse_head": "MLM decoder at the chosen positions only",
    "last_layer": "last layer at the chosen positions only",
    "attention": "attention written out",
    "bf16": "bf16 autocast",
    "compile": "torch.compile",
}


def load_attribution(path: str | Path) -> dict:
    """A record of `throughput.py --attribution`, checked: it names its levers and has the rows
    that the readings below need (none on, each alone, all on, all but each, transformers)."""
    path = Path(path)
    try:
        record = json.loads(path.read_text().strip().splitlines()[-1])
    except (OSError, IndexError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a record of lab/benchmarks/throughput.py --attribution ({e})") from e
    if not isinstance(record, dict) or "levers" not in record or "rows" not in record:
        raise ValueError(
            f"{path}: no 'levers' and 'rows': write it with lab/benchmarks/throughput.py --attribution --json"
        )
    levers = list(record["levers"])
    for on in [[], levers, *([x] for x in levers), *([y for y in levers if y != x] for x in levers)]:
        _speed(record, "bertlab", on)  # raises if a setting is missing
    _speed(record, "transformers", [])
    return record


def _speed(record: dict, impl: str, on: list[str]) -> float:
    for row in record["rows"]:
        if row["impl"] == impl and set(row["on"]) == set(on):
            return float(row["tokens_per_s"])
    raise ValueError(f"the attribution record has no {impl} row with {sorted(on) or 'no lever'} on")


def lever_effects(record: dict) -> dict[str, dict[str, float]]:
    """For each lever: `alone`, tokens/s with it alone over tokens/s with none; `left_out`,
    tokens/s of the full step over tokens/s with every lever but it (both > 1 when it helps)."""
    levers = list(record["levers"])
    none, full = _speed(record, "bertlab", []), _speed(record, "bertlab", levers)
    return {
        x: {
            "alone": _speed(record, "bertlab", [x]) / none,
            "left_out": full / _speed(record, "bertlab", [y for y in levers if y != x]),
        }
        for x in levers
    }


def attribution_table(record: dict) -> str:
    """A Markdown table: one row per lever (its effect alone and left out), then the two ends, both
    beside transformers at the same settings."""
    levers = list(record["levers"])
    effects = lever_effects(record)
    rows = [
        "| switch | tokens/s, this switch alone | speed-up alone | tokens/s, all but this switch "
        "| speed-up it gives the full step |",
        "|---|---:|---:|---:|---:|",
    ]
    for x in levers:
        alone = _speed(record, "bertlab", [x])
        without = _speed(record, "bertlab", [y for y in levers if y != x])
        rows.append(
            f"| {SHORT.get(x, x)} | {alone:,.0f} | {effects[x]['alone']:.2f}x | {without:,.0f} | "
            f"{effects[x]['left_out']:.2f}x |"
        )
    rows.append(f"| none (bertlab) | {_speed(record, 'bertlab', []):,.0f} | 1.00x | | |")
    rows.append(f"| all (bertlab) | {_speed(record, 'bertlab', levers):,.0f} | | | |")
    for row in record["rows"]:
        if row["impl"] == "transformers":
            how = ", ".join(SHORT.get(x, x) for x in row["on"]) or "fp32, eager"
            rows.append(f"| transformers ({how}) | {row['tokens_per_s']:,.0f} | | | |")
    return "\n".join(rows)


def attribution_reading(record: dict) -> str:
    """Two or three sentences generated from the record: the end-to-end speed-up over transformers,
    which lever matters most, and what the levers multiply to against what they give together."""
    levers = list(record["levers"])
    effects = lever_effects(record)
    none, full = _speed(record, "bertlab", []), _speed(record, "bertlab", levers)
    hf_on = [x for x in ("bf16", "compile") if x in levers]
    hf_plain, hf_best = _speed(record, "transformers", []), _speed(record, "transformers", hf_on)
    ranked = sorted(levers, key=lambda x: effects[x]["left_out"], reverse=True)
    product = 1.0
    for x in levers:
        product *= effects[x]["alone"]
    first = (
        f"With none of the {number(len(levers))} switches, bertlab's step runs at {none / hf_plain:.2f} times "
        f"transformers' in fp32 and eager mode ({none:,.0f} against {hf_plain:,.0f} tokens/s): the same "
        f"model doing the same work. With all of them it runs at {full / hf_best:.2f} times transformers "
        f"with {' and '.join(SHORT[x] for x in hf_on) or 'nothing'} on ({full:,.0f} against {hf_best:,.0f})."
    )
    second = (
        f"The full step owes most to the {SHORT.get(ranked[0], ranked[0])} (it runs "
        f"{effects[ranked[0]]['left_out']:.2f}x faster with it than without) and least to the "
        f"{SHORT.get(ranked[-1], ranked[-1])} ({effects[ranked[-1]]['left_out']:.2f}x)."
    )
    turns = [x for x in levers if effects[x]["alone"] < 1 < effects[x]["left_out"]]
    if turns:
        second += " " + " ".join(
            f"The {SHORT.get(x, x)} slows the plain step down by itself ({effects[x]['alone']:.2f}x) and yet the "
            f"full step owes it {effects[x]['left_out']:.2f}x: it pays only together with the others."
            for x in turns
        )
    together = full / none
    relation = "more" if together > product * 1.05 else "less" if together < product / 1.05 else "about as much"
    third = (
        f"Alone, the switches' speed-ups multiply to {product:.2f}x; together they give {together:.2f}x, "
        f"{relation} than that product"
        + (", so they help each other." if relation == "more" else ", so they overlap." if relation == "less" else ".")
    )
    return " ".join([first, second, third])


# --- the CPU allocator: the record of lab/benchmarks/cpu_allocator.py -------------------------------


def load_allocator(path: str | Path) -> dict:
    """A record of `lab/benchmarks/cpu_allocator.py`, checked: blocks of both settings and their medians."""
    path = Path(path)
    try:
        record = json.loads(path.read_text().strip().splitlines()[-1])
    except (OSError, IndexError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a record of lab/benchmarks/cpu_allocator.py ({e})") from e
    need = ("blocks", "kept_s_per_step", "default_s_per_step", "kept_faults_per_step", "default_faults_per_step")
    missing = [k for k in need if not isinstance(record, dict) or k not in record]
    if missing or {b.get("allocator") for b in record["blocks"]} != {"kept", "default"}:
        raise ValueError(
            f"{path}: no {', '.join(missing) or 'blocks of both settings'}: write it with "
            f"lab/benchmarks/cpu_allocator.py --json FILE"
        )
    return record


def allocator_reading(record: dict) -> str:
    """Sentences generated from a record of `lab/benchmarks/cpu_allocator.py`: what keeping freed
    memory on the heap (bertlab.runtime.keep_freed_memory) did to bertlab's step, its page faults
    and its peak memory, with the spread of the alternating processes."""

    def spread(setting: str) -> str:
        times = sorted(b["s_per_step"] for b in record["blocks"] if b["allocator"] == setting)
        return f"{times[0]:.2f}-{times[-1]:.2f}" if len(times) > 1 else f"{times[0]:.2f}"

    kept, plain = record["kept_s_per_step"], record["default_s_per_step"]
    n = sum(b["allocator"] == "kept" for b in record["blocks"])
    machine = record["cpu"] + (
        f" (family/model {record['cpu_family_model']})" if record.get("cpu_family_model") else ""
    )
    how = f"{record['precision']}, {'compiled' if record['compiled'] else 'eager'}, dropout {record['dropout']:g}"
    text = (
        f"With freed memory kept, bertlab's step took {kept:.2f} s against {plain:.2f} s with `malloc` as it "
        f"is ({time_change(plain, kept)}; medians of {number(n)} alternating processes each, "
        f"{spread('kept')} s and {spread('default')} s; {how}, {record['threads']} threads of an {machine}). "
        f"It faulted {record['kept_faults_per_step']:,.0f} pages in a step against "
        f"{record['default_faults_per_step']:,.0f}"
    )
    if "kept_system_s_per_step" in record:
        text += (
            f" and spent {record['kept_system_s_per_step']:.2f} s of CPU time a step in the kernel, which serves "
            f"page faults, against {record['default_system_s_per_step']:.2f} s"
        )
    if "kept_peak_rss_mb" in record:
        text += (
            f"; the process's peak memory was {record['kept_peak_rss_mb']:,.0f} MiB against "
            f"{record['default_peak_rss_mb']:,.0f} MiB"
        )
    return text + "."


MMAP_THRESHOLD_MAX = 32 * 2**20  # glibc's dynamic mmap threshold rises to this at most (64-bit)


def large_blocks(record: dict) -> str:
    """A sentence sizing the largest blocks of the step a record of `lab/benchmarks/cpu_allocator.py`
    timed: one layer's feed-forward activations (B*T tokens x 4H values) and the masked-LM logits
    (B x P prediction slots x V pieces), against the largest threshold of glibc's malloc (32 MiB on
    64-bit Linux): a block at least that large, with malloc's header, is always mapped apart from the
    heap and handed back to the system when freed."""
    size = 2 if record["precision"] in ("bf16", "fp16") else 4  # bytes of one activation
    slots = record.get("mlm_slots") or default_max_predictions(record["seq_len"])  # the benchmark's batch
    tokens, inner = record["batch_size"] * record["seq_len"], 4 * record["hidden"]
    ffn, logits = tokens * inner * size, record["batch_size"] * slots * record["vocab_size"] * size
    mib = 2**20
    over = [b >= MMAP_THRESHOLD_MAX for b in (ffn, logits)]
    verdict = {
        (True, True): "both at or above",
        (True, False): "the first at or above",
        (False, True): "the second at or above",
        (False, False): "both below",
    }[tuple(over)]
    return (
        f"In this step ({record['preset']}, {record['batch_size']} sequences of {record['seq_len']} tokens, "
        f"{record['precision']}) one layer's feed-forward activations take {tokens:,} tokens x {inner:,} values "
        f"x {size} bytes = {ffn / mib:.1f} MiB and the masked-LM logits {record['batch_size']} sequences x "
        f"{slots} prediction slots x {record['vocab_size']:,} pieces x {size} bytes = {logits / mib:.1f} MiB: "
        f"{verdict} the {MMAP_THRESHOLD_MAX // mib} MiB that malloc's threshold rises to at most."
    )


def time_change(plain: float, kept: float) -> str:
    """'15% less time', '3% more time' or 'the same time': kept's step time against plain's."""
    change = kept / plain - 1
    if abs(change) < 0.005:
        return "the same time"
    return f"{abs(change):.0%} {'less' if change < 0 else 'more'} time"


# --- the throughput records: lab/benchmarks/throughput.py --json (data/benchmarks/cpu_*.json) ------


def load_throughput(folder: str | Path, pattern: str = "cpu_*.json") -> list[dict]:
    """The records of `lab/benchmarks/throughput.py --json` in `folder` whose names match `pattern`,
    in name order; a file that is not such a record is an error naming it."""
    need = ("cpu", "preset", "bertlab_tokens_per_s", "transformers_tokens_per_s", "speedup")
    records = []
    for path in sorted(Path(folder).glob(pattern)):
        try:
            record = json.loads(path.read_text().strip().splitlines()[-1])
        except (OSError, IndexError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: not a record of lab/benchmarks/throughput.py ({e})") from e
        missing = [k for k in need if not isinstance(record, dict) or k not in record]
        if missing:
            raise ValueError(f"{path}: no {', '.join(missing)}; write it with lab/benchmarks/throughput.py --json FILE")
        records.append(record)
    return records


def machine_name(record: dict) -> str:
    """The CPU as a record names it, with its family/model numbers where it has them ("AMD EPYC"
    names Zen 3 and Zen 4 alike)."""
    return record["cpu"] + (f" ({record['cpu_family_model']})" if record.get("cpu_family_model") else "")


def masked_share(record: dict) -> float:
    """The share of each sequence's positions the record's step predicted: its `mlm_probability`,
    or for records written before the benchmark took one, its predictions over its length."""
    if "mlm_probability" in record:
        return record["mlm_probability"]
    return record["mlm_predictions"] / record["seq_len"]


def throughput_table(records: list[dict]) -> str:
    """A Markdown table of throughput records, one row each, in five columns so that it fits a
    page: the CPU; the step (size, vocabulary, batch x sequence, share of the positions masked)
    and how it ran (dropout, precision, compiled, memory kept, the last layer where the heads read
    it, the models taking turns); both models' tokens/s; their
    ratio; and bertlab's share of the two ceilings (the 2048^3 matmul, the step's own matmuls at
    their shapes). The absolute GFLOP/s stay in the records."""
    rows = [
        "| CPU | step, and how it ran | tokens/s: bertlab / transformers | speed-up "
        "| bertlab's share of the 2048³ / model-shape ceiling |",
        "|---|---|---:|---:|---:|",
    ]
    for b in records:
        how = [f"dropout {b.get('dropout', 0.1):g}", b["precision"]]
        how += ["compiled"] * bool(b.get("compiled")) + ["memory kept"] * (b.get("cpu_allocator") == "kept")
        how += ["last layer where read"] * bool(b.get("last_layer"))
        if (b.get("rounds") or 1) > 1:
            how.append(f"the best of {b['rounds']} rounds in turns")
        shape = b.get("fraction_of_model_shape_ceiling")
        rows.append(
            f"| {machine_name(b)} | {b['preset']} {b['layers']}/{b['hidden']}/{b['heads']}, "
            f"V {b['vocab_size']:,}, {b['batch_size']} x {b['seq_len']}, {masked_share(b):.0%} masked; "
            f"{', '.join(how)} | {b['bertlab_tokens_per_s']:,.0f} / {b['transformers_tokens_per_s']:,.0f} "
            f"| {b['speedup']:.2f}x | {b['fraction_of_ceiling']:.0%} / {f'{shape:.0%}' if shape else 'not measured'} |"
        )
    return "\n".join(rows)


def how_timed(records: list[dict]) -> str:
    """How the figures of `records` were timed, for a reading: "Each figure is one run" when any
    was timed once, or "Each figure is the least disturbed of 3 rounds (3 to 5) of one run, the
    two models taking turns" when all took turns."""
    rounds = sorted({b.get("rounds") or 1 for b in records})
    if not records or rounds[0] <= 1:
        return "Each figure is one run"
    n = f"{rounds[0]}" if len(rounds) == 1 else f"{rounds[0]} to {rounds[-1]}"
    return f"Each figure is the least disturbed of {n} rounds of one run, the two models taking turns"


def timed_in_turns(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """`records` split by how they were timed: those whose two models took turns for several
    rounds (`throughput.py --rounds N`, N > 1, each figure its least disturbed round), and those
    timed once, one model after the other, whose ratio a busy machine can move by tens of percent."""
    turns = [b for b in records if (b.get("rounds") or 1) > 1]
    return turns, [b for b in records if (b.get("rounds") or 1) <= 1]


def throughput_machines(records: list[dict]) -> list[str]:
    """Each machine the records were measured on, once: CPU, threads and torch version."""
    return sorted({f"{machine_name(b)}, {b['threads']} threads, torch {b['torch']}" for b in records})


def masking_reading(records: list[dict]) -> str | None:
    """What masking more of each sequence does to bertlab's lead, from throughput records that
    differ only in their masked share (same CPU, step, precision, compilation, dropout and
    allocator); None when no two records do. bertlab's decoder runs at the masked positions only and
    transformers' at every position, so the lead narrows as the share grows; the share the model-shape
    ceiling would allow (a step doing nothing but its matmuls) bounds what any tuning could reach."""
    same = ("cpu", "cpu_family_model", "preset", "vocab_size", "batch_size", "seq_len", "precision", "compiled",
            "dropout", "cpu_allocator", "last_layer")  # fmt: skip
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(tuple(r.get(k) for k in same), []).append(r)
    group = max(groups.values(), key=lambda g: len({masked_share(r) for r in g}))
    by_share = {masked_share(r): r for r in group}  # the last record of a share wins
    if len(by_share) < 2:
        return None
    rows = [by_share[s] for s in sorted(by_share)]
    first = rows[0]
    how = f"dropout {first['dropout']:g}, {first['precision']}" + (", compiled" if first.get("compiled") else "")
    parts = []
    for r in rows:
        part = f"{masked_share(r):.0%} masked ({r['mlm_predictions']} of {r['seq_len']} positions): {r['speedup']:.2f}x"
        if r.get("speedup_at_model_shape_ceiling"):
            part += f", at most {r['speedup_at_model_shape_ceiling']:.2f}x at its model-shape ceiling"
        parts.append(part)
    low, high = rows[0], rows[-1]
    text = (
        f"How much is masked changes the lead. On {machine_name(first)}, {first['preset']}'s step of "
        f"{first['batch_size']} x {first['seq_len']} ({how}), bertlab's against transformers': {'; '.join(parts)}. "
        f"The decoder of transformers runs at all {high['seq_len']} positions whatever the share, so its step "
        f"costs the same; bertlab's runs at the masked ones only, and going from {masked_share(low):.0%} to "
        f"{masked_share(high):.0%} adds {high['model_flops_per_step'] / low['model_flops_per_step'] - 1:.0%} "
        "to its FLOPs."
    )
    ceiling = high.get("speedup_at_model_shape_ceiling")
    if ceiling:
        text += (
            f" At {masked_share(high):.0%}, a step that did nothing but its own matrix products would run "
            f"{ceiling:.2f}x transformers' measured one: no tuning of what lies outside the matmuls could take "
            f"bertlab further than that on this machine."
        )
    theirs = [r["transformers_s_per_step"] for r in rows if r.get("transformers_s_per_step")]
    if len(theirs) == len(rows) and max(theirs) > 1.05 * min(theirs):
        text += (
            f" {how_timed(rows)}, and the same step of transformers took {min(theirs):.2f} to "
            f"{max(theirs):.2f} s across them: read the trend, not the second decimal."
        )
    return text


def dropout_reading(records: list[dict]) -> str | None:
    """What the paper's dropout of 0.1 costs each model's tokens/s, from pairs of throughput records
    that differ only in their dropout (0 against 0.1; same CPU, step, masked share, precision,
    compilation and allocator), one clause a pair; None when no two records make such a pair."""
    same = ("cpu", "cpu_family_model", "preset", "vocab_size", "batch_size", "seq_len", "precision", "compiled",
            "cpu_allocator", "last_layer")  # fmt: skip
    groups: dict[tuple, dict[float, dict]] = {}
    for r in records:
        key = (*(r.get(k) for k in same), masked_share(r))
        groups.setdefault(key, {})[r.get("dropout", 0.1)] = r  # the last record of a dropout wins
    pairs = [(g[0.0], g[0.1]) for g in groups.values() if 0.0 in g and 0.1 in g]
    if not pairs:
        return None

    def cost(off: dict, on: dict, impl: str) -> float:
        return 1 - on[f"{impl}_tokens_per_s"] / off[f"{impl}_tokens_per_s"]

    parts = []
    for off, on in pairs:
        how = off["precision"] + (", compiled" if off.get("compiled") else "")
        parts.append(
            f"on {machine_name(off)}, {masked_share(off):.0%} masked ({how}), it costs bertlab "
            f"{cost(off, on, 'bertlab'):.0%} ({off['bertlab_tokens_per_s']:,.0f} to {on['bertlab_tokens_per_s']:,.0f} "
            f"tokens/s) and transformers {cost(off, on, 'transformers'):.0%}"
        )
    return (
        "Dropout is not free. Each dropout layer draws a random mask as large as the activations it "
        "drops from and multiplies by it, forward and backward, work that no matrix product hides: "
        f"{'; '.join(parts)}. {how_timed([r for pair in pairs for r in pair])}."
    )
