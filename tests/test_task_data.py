"""Tests of bertlab.data.task_data: the readers of the fine-tuning datasets, on the real files of the data
mirror (``$BERTLAB_DATA_MIRROR``, or ``../shared/data`` beside the repository) and on small broken
files written to a temporary folder: everything skipped is reported with file and line.
"""

from __future__ import annotations

from collections import Counter

import pytest

from bertlab.data import download, task_data
from bertlab.data.task_data import DataFormatError

pytestmark = pytest.mark.usefixtures("mirror")


# ----------------------------------------------------------------------------------------------
# Readers on the real files
# ----------------------------------------------------------------------------------------------


def test_glue_row_counts_and_labels():
    sst2, report = task_data.read_sst2("dev")
    assert len(sst2) == 872 and report.ok and report.loaded == 872
    assert Counter(e.label for e in sst2) == {0: 428, 1: 444}
    assert sst2[0].sentence and not sst2[0].sentence.endswith(" ")
    test, _ = task_data.read_sst2("test")
    assert len(test) == 1821 and all(e.label is None for e in test)

    mrpc, report = task_data.read_mrpc("train")
    assert len(mrpc) == 3668 and report.ok
    assert Counter(e.label for e in mrpc) == {1: 2474, 0: 1194}
    assert task_data.MRPC_LABELS[1] == "equivalent"
    brandeis = [e for e in mrpc if e.id == "2750203-2750153"]  # the row the source repository had lost
    assert len(brandeis) == 1 and "heartrending" in brandeis[0].text_a

    rte, report = task_data.read_rte("dev")
    assert len(rte) == 277 and report.ok
    assert Counter(task_data.RTE_LABELS[e.label] for e in rte) == {"entailment": 146, "not_entailment": 131}

    qnli, _ = task_data.read_qnli("dev")
    assert len(qnli) == 5463 and qnli[0].text_a.endswith("?")


def test_squad_dev():
    examples, report = task_data.read_squad("dev")
    assert len(examples) == 10570 and report.ok
    assert sum(len(e.answers) for e in examples) == 34726
    assert len({e.title for e in examples}) == 48
    for e in examples[:500]:
        for text, start in e.answers:
            assert e.context[start : start + len(text)] == text


def test_conll2003_train():
    sentences, report = task_data.read_conll2003("train")
    assert len(sentences) == 14041 and report.ok and not report.warnings
    tags = Counter(t for s in sentences for t in s.tags)
    assert tags["B-PER"] == 6600 and tags["B-LOC"] == 7140 and tags["B-ORG"] == 6321 and tags["B-MISC"] == 3438
    assert sum(len(s.words) for s in sentences) == 203621
    assert len({s.document for s in sentences}) == 946
    assert set(tags) <= set(task_data.CONLL_TAGS)
    assert all(len(s.words) == len(s.tags) == len(s.pos) for s in sentences)


# ----------------------------------------------------------------------------------------------
# Readers on broken files: everything skipped is reported with file and line
# ----------------------------------------------------------------------------------------------


def test_malformed_tsv_rows_are_counted_and_reported(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_bytes(
        b"sentence\tlabel\n"
        b"a fine film \t1\n"  # 2: good
        b"no label here\n"  # 3: one field
        b"\n"  # 4: empty line
        b"too\tmany\tfields\n"  # 5
        b"bad label \tpositive\n"  # 6: label not 0/1
        b"caf\xe9 latin-1 \t0\n"  # 7: undecodable
        b"\t1\n"  # 8: empty sentence
        b'a "quoted" word \t0\n'  # 9: good; quotes are text under QUOTE_NONE
    )
    examples, report = task_data.read_sst2(path)
    assert [e.sentence for e in examples] == ["a fine film", 'a "quoted" word']
    assert [s.line for s in report.skipped] == [3, 4, 5, 6, 7, 8]
    assert report.loaded == 2 and not report.ok
    text = str(report)
    assert "dev.tsv:7" in text and "undecodable" in text and "fields" in text
    with pytest.raises(DataFormatError, match=r"dev\.tsv:3"):
        task_data.read_sst2(path, strict=True)


def test_pair_reader_rejects_a_wrong_file_and_reports_bad_labels(tmp_path):
    wrong = tmp_path / "wrong.tsv"
    wrong.write_text("sentence\tlabel\nx\t1\n")
    with pytest.raises(DataFormatError, match="header"):
        task_data.read_rte(wrong)
    path = tmp_path / "rte.tsv"
    path.write_text("index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\tentailment\n1\tA.\tB.\tmaybe\n\r\n")
    examples, report = task_data.read_rte(path)
    assert len(examples) == 1 and examples[0].label == 0
    assert [(s.line, s.item) for s in report.skipped] == [(3, "1"), (4, None)]
    assert "maybe" in report.skipped[0].reason


def test_squad_answers_not_in_context_are_reported(tmp_path):
    import json

    data = {
        "version": "1.1",
        "data": [
            {
                "title": "T",
                "paragraphs": [
                    {
                        "context": "The cat sat on the mat.",
                        "qas": [
                            {
                                "id": "q1",
                                "question": "Where?",
                                "answers": [
                                    {"text": "the mat", "answer_start": 15},
                                    {"text": "the mat", "answer_start": 3},
                                ],
                            },
                            {"id": "q2", "question": "Who?", "answers": [{"text": "dog", "answer_start": 4}]},
                            {"id": "q1", "question": "Again?", "answers": [{"text": "cat", "answer_start": 4}]},
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data))
    examples, report = task_data.read_squad(path)
    assert [(e.id, e.answers) for e in examples] == [("q1", [("the mat", 15)])]
    assert [(s.item, s.reason.split(":")[0]) for s in report.skipped] == [
        ("q1", "answer 1"),
        ("q2", "answer 0"),
        ("q2", "no valid answer"),
        ("q1", "duplicate question id"),
    ]
    with pytest.raises(DataFormatError, match="q1"):
        task_data.read_squad(path, strict=True)
    broken = tmp_path / "broken.json"
    broken.write_text('{"data": [\n{"title": }\n]}')
    with pytest.raises(DataFormatError, match=r"broken\.json: invalid JSON at line 2"):
        task_data.read_squad(broken)


def test_conll_bad_lines_skip_their_sentence_and_iob2_errors_warn(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(
        b"-DOCSTART- -X- -X- O\n\n"
        b"EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"  # sentence 0, document 0
        b"Peter NNP B-NP B-PER\nBlackburn NNP I-NP\n\n"  # 3 columns: skipped (line 7)
        b"-DOCSTART- -X- -X- O\n\n"
        b"in IN B-PP O\nLondon NNP B-NP I-LOC\n\n"  # kept, invalid IOB2 warned (line 12)
        b"BRUSSELS NNP B-NP B-CITY\n\n"  # unknown tag: skipped (line 14)
        b"caf\xe9 NN B-NP O\n"  # undecodable: skipped (line 16)
    )
    sentences, report = task_data.read_conll2003(path)
    assert [s.words for s in sentences] == [["EU", "rejects"], ["in", "London"]]
    assert [s.document for s in sentences] == [0, 1]
    assert [s.line for s in report.skipped] == [7, 14, 16]
    assert [w.line for w in report.warnings] == [12] and "I-LOC after O" in report.warnings[0].reason
    with pytest.raises(DataFormatError, match=r"train\.txt:7"):
        task_data.read_conll2003(path, strict=True)


def test_unknown_names_and_paths_are_clear_errors(tmp_path):
    with pytest.raises(KeyError, match="sst2:dev"):
        download.lookup("sst-2-dev")
    with pytest.raises(FileNotFoundError, match="no such data file"):
        task_data.read_sst2(tmp_path / "missing.tsv")
