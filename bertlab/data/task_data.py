"""Reading the fine-tuning datasets into plain records: SST-2, MRPC, RTE, QNLI, SQuAD, CoNLL-2003.

Each `read_*` takes a split name ("dev", fetched and checked by `bertlab.data.download.fetch`) or a
path, and returns (examples, report): small dataclasses, and a `LoadReport` naming every row
skipped, where and why. `strict=True` raises `DataFormatError` on the first bad row instead.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from bertlab.data.download import DataError, fetch


class DataFormatError(DataError):
    """A data file has a row that cannot be read (raised by the readers with strict=True)."""


@dataclass
class Skipped:
    """One item a reader did not return, and why."""

    file: str
    line: int | None  # 1-based line number, None for JSON records
    item: str | None  # example id where there is one
    reason: str
    excerpt: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        if self.item:
            where += f" [{self.item}]"
        return f"{where}: {self.reason}" + (f" -- {self.excerpt!r}" if self.excerpt else "")


@dataclass
class LoadReport:
    """How many records a reader read, and every item it skipped or found suspicious."""

    file: str
    loaded: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[Skipped] = field(default_factory=list)  # kept, but worth knowing (e.g. IOB2 repairs)
    strict: bool = field(default=False, repr=False, compare=False)  # raise on the first item skipped

    @property
    def ok(self) -> bool:
        return not self.skipped

    def skip(self, line: int | None, reason: str, excerpt: str = "", item: str | None = None) -> None:
        s = Skipped(self.file, line, item, reason, excerpt[:120])
        if self.strict:
            raise DataFormatError(f"{s} (strict=True; pass strict=False to skip and report such rows)")
        self.skipped.append(s)

    def warn(self, line: int | None, reason: str, excerpt: str = "", item: str | None = None) -> None:
        self.warnings.append(Skipped(self.file, line, item, reason, excerpt[:120]))

    def __str__(self) -> str:
        lines = [f"{self.file}: {self.loaded} loaded, {len(self.skipped)} skipped, {len(self.warnings)} warnings"]
        lines += [f"  skipped {s}" for s in self.skipped[:20]]
        lines += [f"  warning {s}" for s in self.warnings[:20]]
        more = len(self.skipped) + len(self.warnings) - 40
        if more > 0:
            lines.append(f"  ... and {more} more")
        return "\n".join(lines)


def _resolve(split_or_path: str | Path, template: str) -> Path:
    """A split name ("dev") becomes a fetched registry file; anything path-like is used as is."""
    p = Path(split_or_path)
    if isinstance(split_or_path, Path) or os.sep in str(split_or_path) or p.suffix:
        if not p.is_file():
            raise FileNotFoundError(f"no such data file: {p}")
        return p
    return fetch(template.format(split=split_or_path))


def _decoded_lines(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line number, text, problem) per line; an undecodable line has text None and says why."""
    raw_lines = path.read_bytes().removeprefix(b"\xef\xbb\xbf").split(b"\n")  # utf-8-sig: drop the BOM
    if raw_lines and raw_lines[-1] == b"":  # the final newline does not start a line
        raw_lines.pop()
    for number, raw in enumerate(raw_lines, start=1):
        try:
            yield number, raw.decode("utf-8").rstrip("\r"), ""
        except UnicodeDecodeError as err:
            excerpt = raw.decode("utf-8", "replace")[:120]
            yield number, None, f"undecodable bytes (not UTF-8) at byte {err.start}: {excerpt!r}"


def _tsv_rows(path: Path, expected: Sequence[str], report: LoadReport) -> Iterator[tuple[int, list[str]]]:
    """Rows of a GLUE TSV (tab-separated, QUOTE_NONE, UTF-8 with optional BOM), header checked."""
    lines = _decoded_lines(path)
    first = next(lines, None)
    if first is None or first[1] is None:
        raise DataFormatError(f"{path}:1: empty or undecodable header, expected {list(expected)}")
    header = next(csv.reader([first[1]], delimiter="\t", quoting=csv.QUOTE_NONE))
    if header != list(expected):
        raise DataFormatError(f"{path}:1: header {header} is not {list(expected)}: is this the right file?")
    for number, text, problem in lines:
        if text is None:
            report.skip(number, problem)
            continue
        if not text.strip():
            report.skip(number, "empty line")
            continue
        row = next(csv.reader([text], delimiter="\t", quoting=csv.QUOTE_NONE))
        if len(row) != len(header):
            report.skip(number, f"{len(row)} tab-separated fields, expected {len(header)}", text)
            continue
        yield number, row


# --- GLUE: SST-2, MRPC, RTE, QNLI ---
SST2_LABELS = ("negative", "positive")
MRPC_LABELS = ("not_equivalent", "equivalent")
RTE_LABELS = ("entailment", "not_entailment")
QNLI_LABELS = ("entailment", "not_entailment")


@dataclass
class SentenceExample:
    """A single-sentence classification example (SST-2). `label` is None on the unlabelled test split."""

    id: str
    sentence: str
    label: int | None


@dataclass
class PairExample:
    """A sentence-pair classification example (MRPC, RTE, QNLI). `label` is None on test."""

    id: str
    text_a: str
    text_b: str
    label: int | None


def _label(value: str, names: Sequence[str], numeric: bool) -> int:
    if numeric:
        label = int(value)
        if not 0 <= label < len(names):
            raise ValueError
        return label
    return list(names).index(value)


def read_sst2(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[SentenceExample], LoadReport]:
    """SST-2 (Socher et al. 2013, as in GLUE): sentence<TAB>label, 0 = negative, 1 = positive."""
    path = _resolve(split_or_path, "glue/SST-2/{split}.tsv")
    report = LoadReport(str(path), strict=strict)
    test = _header_of(path)[0].strip() == "index"
    header = ("index", "sentence") if test else ("sentence", "label")
    out = []
    for number, row in _tsv_rows(path, header, report):
        if test:
            out.append(SentenceExample(row[0], row[1].strip(), None))
            continue
        sentence = row[0].strip()
        if not sentence:
            report.skip(number, "empty sentence", "\t".join(row))
            continue
        try:
            label = _label(row[1], SST2_LABELS, numeric=True)
        except ValueError:
            report.skip(number, f"label {row[1]!r} is not 0 or 1", "\t".join(row))
            continue
        out.append(SentenceExample(f"{Path(path).stem}-{number - 1}", sentence, label))
    report.loaded = len(out)
    return out, report


def _read_pairs(
    path: Path,
    names: Sequence[str],
    strict: bool,
    header: list[str],
    *,
    label: str = "label",
    ids: Sequence[str] = ("index",),
    numeric: bool = False,
) -> tuple[list[PairExample], LoadReport]:
    """A GLUE pair TSV: texts A and B are the last two columns but the label, `ids` make the id,
    labels are 0/1 (`numeric`) or one of `names`; the test split has "index" and no label."""
    report = LoadReport(str(path), strict=strict)
    test = label not in _header_of(path)
    columns = ["index", *(c for c in header if c not in (label, "index"))] if test else header
    text_a, text_b = [c for c in columns if c != label][-2:]
    out = []
    for number, row in _tsv_rows(path, columns, report):
        cell = dict(zip(columns, row))
        id_ = "-".join(cell[c] for c in ids)
        a, b = cell[text_a].strip(), cell[text_b].strip()
        if not a or not b:
            report.skip(number, "empty text", "\t".join(row), item=id_)
            continue
        value = None
        if not test:
            try:
                value = _label(cell[label], names, numeric=numeric)
            except ValueError:
                report.skip(number, f"label {cell[label]!r} not in {list(names)}", "\t".join(row), item=id_)
                continue
        out.append(PairExample(id_, a, b, value))
    report.loaded = len(out)
    return out, report


def _header_of(path: Path) -> list[str]:
    with open(path, "rb") as f:
        return f.readline().decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r\n").split("\t")


def read_mrpc(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[PairExample], LoadReport]:
    """MRPC (Dolan & Brockett 2005, GLUE split). id = "<#1 ID>-<#2 ID>"; label 1 = paraphrase."""
    path = _resolve(split_or_path, "glue/MRPC/{split}.tsv")
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    return _read_pairs(path, MRPC_LABELS, strict, header, label="Quality", ids=["#1 ID", "#2 ID"], numeric=True)


def read_rte(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[PairExample], LoadReport]:
    """RTE (GLUE): label 0 = entailment, 1 = not_entailment (GLUE's order)."""
    path = _resolve(split_or_path, "glue/RTE/{split}.tsv")
    return _read_pairs(path, RTE_LABELS, strict, ["index", "sentence1", "sentence2", "label"])


def read_qnli(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[PairExample], LoadReport]:
    """QNLI (GLUE v2): text_a = question, text_b = sentence; 0 = entailment, 1 = not_entailment."""
    path = _resolve(split_or_path, "glue/QNLI/{split}.tsv")
    return _read_pairs(path, QNLI_LABELS, strict, ["index", "question", "sentence", "label"])


# --- SQuAD v1.1 ---
@dataclass
class SquadExample:
    """One SQuAD v1.1 question; `answers` are (text, start) with context[start:start + len(text)] == text."""

    id: str
    title: str
    question: str
    context: str
    answers: list[tuple[str, int]]


def read_squad(split_or_path: str | Path = "dev", *, strict: bool = False) -> tuple[list[SquadExample], LoadReport]:
    """SQuAD v1.1 (Rajpurkar et al. 2016). An answer not at its answer_start is dropped, and a
    question left without a valid answer skipped; both are reported."""
    path = _resolve(split_or_path, "squad-v1.1/{split}-v1.1.json")
    report = LoadReport(str(path), strict=strict)
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise DataFormatError(f"{path}: not UTF-8 at byte {err.start}") from None
    except json.JSONDecodeError as err:
        raise DataFormatError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    if not isinstance(data, dict) or "data" not in data:
        raise DataFormatError(f"{path}: expected a JSON object with a 'data' list (SQuAD format)")
    if data.get("version") not in (None, "1.1"):
        report.warn(None, f"version is {data.get('version')!r}, expected '1.1'")
    out, seen = [], set()
    for a, article in enumerate(data["data"]):
        title = article.get("title", "")
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            context = paragraph.get("context")
            if not isinstance(context, str) or not context.strip():
                report.skip(None, f"article {a} paragraph {p}: missing or empty context", item=title)
                continue
            for qa in paragraph.get("qas", []):
                qid = str(qa.get("id", f"article{a}-paragraph{p}-?"))
                question = qa.get("question")
                if not isinstance(question, str) or not question.strip():
                    report.skip(None, "missing or empty question", item=qid)
                    continue
                if qid in seen:
                    report.skip(None, "duplicate question id", question, item=qid)
                    continue
                answers = []
                for k, ans in enumerate(qa.get("answers", [])):
                    text, start = ans.get("text"), ans.get("answer_start")
                    if not isinstance(text, str) or not isinstance(start, int):
                        report.skip(None, f"answer {k}: missing text or answer_start", str(ans), item=qid)
                    elif context[start : start + len(text)] != text:
                        report.skip(
                            None,
                            f"answer {k}: {text!r} is not at answer_start {start} "
                            f"(context there: {context[start : start + len(text)]!r})",
                            text,
                            item=qid,
                        )
                    else:
                        answers.append((text, start))
                if not answers:
                    report.skip(None, "no valid answer", question, item=qid)
                    continue
                seen.add(qid)
                out.append(SquadExample(qid, title, question, context, answers))
    report.loaded = len(out)
    return out, report


# --- CoNLL-2003 NER ---
CONLL_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


@dataclass
class NerSentence:
    """One CoNLL-2003 sentence: words and their IOB2 NER tags (plus POS and chunk columns)."""

    id: str  # "<split>-<sentence number>"
    words: list[str]
    tags: list[str]
    pos: list[str]
    chunks: list[str]
    document: int  # index of the -DOCSTART- document this sentence belongs to
    line: int  # line of the first word in the file


def read_conll2003(
    split_or_path: str | Path = "train", *, strict: bool = False
) -> tuple[list[NerSentence], LoadReport]:
    """CoNLL-2003 English NER (Tjong Kim Sang & De Meulder 2003) in IOB2: "word POS chunk NER" lines.
    A sentence with a bad line is skipped whole (its tags would be misaligned); an I-X that
    continues no X entity is kept, with a warning."""
    path = _resolve(split_or_path, "conll2003/{split}.txt")
    report = LoadReport(str(path), strict=strict)
    stem = Path(path).stem
    out: list[NerSentence] = []
    document = -1
    rows: list[tuple[int, list[str]]] = []
    bad: tuple[int, str, str] | None = None

    def flush() -> None:
        nonlocal rows, bad
        if bad is not None:
            first = rows[0][0] if rows else bad[0]
            report.skip(bad[0], f"sentence starting at line {first} skipped: {bad[1]}", bad[2])
        elif rows:
            words, pos, chunks, tags = (list(col) for col in zip(*(r for _, r in rows)))
            sentence = NerSentence(f"{stem}-{len(out)}", words, tags, pos, chunks, max(document, 0), rows[0][0])
            for i, tag in enumerate(tags):
                prev = tags[i - 1] if i else "O"
                if tag.startswith("I-") and prev[2:] != tag[2:]:
                    report.warn(rows[i][0], f"invalid IOB2: {tag} after {prev}", words[i], item=sentence.id)
            out.append(sentence)
        rows, bad = [], None

    for number, text, problem in _decoded_lines(Path(path)):
        if text is None:
            if bad is None:
                bad = (number, problem, "")
            continue
        if not text.strip():
            flush()
            continue
        cols = text.split()
        if cols[0] == "-DOCSTART-":
            flush()
            document += 1
            continue
        if bad is not None:
            continue
        if len(cols) != 4:
            bad = (number, f"{len(cols)} columns, expected 4 (word POS chunk NER)", text)
        elif cols[3] not in CONLL_TAGS:
            bad = (number, f"unknown NER tag {cols[3]!r}", text)
        else:
            rows.append((number, cols))
    flush()
    report.loaded = len(out)
    return out, report
