from __future__ import annotations

import json
from pathlib import Path

import pytest

from textgate import data
from textgate.errors import DataError


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


CSV = "text,label\nwin a prize now,spam\nsee you at lunch,ham\ncall me later,ham\n"


def test_csv_loads_with_inferred_labels(tmp_path: Path) -> None:
    table = data.load_file(write(tmp_path, "d.csv", CSV))
    assert table.label_names == ("ham", "spam")
    assert table.counts() == {"ham": 2, "spam": 1}
    assert table.label_ids() == [1, 0, 0]


def test_tsv_and_custom_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "d.tsv", "id\tbody\tstars\n1\tgreat\tpos\n2\tawful\tneg\n")
    table = data.load_file(path, text_column="body", label_column="stars", labels=["neg", "pos"])
    assert table.texts == ("great", "awful")
    assert table.label_ids() == [1, 0]


def test_jsonl_with_non_string_labels(tmp_path: Path) -> None:
    lines = [{"text": "good", "label": 1}, {"text": "bad", "label": 0}]
    path = write(tmp_path, "d.jsonl", "\n".join(json.dumps(x) for x in lines))
    assert data.load_file(path).labels == ("1", "0")


def test_whitespace_normalised_duplicates_removed(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", 'text,label\n"a  b",x\n" a b ",x\nc,y\n')
    table = data.load_file(path)
    assert table.texts == ("a b", "c")
    assert table.report.duplicates == 1


def test_conflicting_labels_dropped_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "text,label\nsame,x\nsame,y\nother,x\nmore,y\n")
    table = data.load_file(path)
    assert "same" not in table.texts
    assert table.report.conflicts == 1


def test_conflict_is_error_under_strict(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "text,label\nsame,x\nsame,y\nother,x\n")
    with pytest.raises(DataError, match="row 3.*also appears with label 'x' at row 2"):
        data.load_file(path, strict=True)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file") as info:
        data.load_file(tmp_path / "nope.csv")
    assert info.value.hint and "--data" in info.value.hint


def test_directory_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(DataError, match="is a directory"):
        data.load_file(tmp_path / "d.csv")


def test_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="unknown file type '.xlsx'"):
        data.load_file(write(tmp_path, "d.xlsx", CSV))


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        data.load_file(write(tmp_path, "d.csv", ""))


def test_header_only(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no usable rows"):
        data.load_file(write(tmp_path, "d.csv", "text,label\n"))


def test_missing_column_names_it_and_lists_columns(tmp_path: Path) -> None:
    with pytest.raises(DataError) as info:
        data.load_file(write(tmp_path, "d.csv", CSV), text_column="body")
    assert info.value.column == "body"
    assert "columns: text, label" in info.value.message


def test_missing_jsonl_key(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no key 'label'"):
        data.load_file(write(tmp_path, "d.jsonl", '{"text": "x", "y": 1}\n'))


def test_single_label(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="only one label"):
        data.load_file(write(tmp_path, "d.csv", "text,label\na,x\nb,x\n"))


def test_non_utf8_reports_byte_offset_and_line(tmp_path: Path) -> None:
    raw = b"text,label\nok,x\ncaf\xe9,y\n"
    with pytest.raises(DataError) as info:
        data.load_file(write(tmp_path, "d.csv", raw))
    assert "byte offset 19" in info.value.message
    assert info.value.row == 3
    assert info.value.hint and "UTF-8" in info.value.hint


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    table = data.load_file(write(tmp_path, "d.csv", "\ufeff" + CSV))
    assert len(table) == 3


def test_empty_texts_skipped_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", 'text,label\n"  ",x\na,x\nb,y\n')
    table = data.load_file(path)
    assert table.report.skipped["empty text"] == 1
    assert table.report.examples["empty text"] == [2]


def test_empty_text_is_error_under_strict(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", 'text,label\n"  ",x\na,x\nb,y\n')
    with pytest.raises(DataError, match="row 2: empty text"):
        data.load_file(path, strict=True)


def test_undeclared_label_skipped_or_strict_error(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "text,label\na,x\nb,y\nc,z\n")
    table = data.load_file(path, labels=["x", "y"])
    assert table.report.skipped["label not in declared set"] == 1
    with pytest.raises(DataError, match="row 4: label not in declared set"):
        data.load_file(path, labels=["x", "y"], strict=True)


def test_malformed_jsonl_line(tmp_path: Path) -> None:
    path = write(tmp_path, "d.jsonl", '{"text":"a","label":"x"}\n{oops\n{"text":"b","label":"y"}\n')
    table = data.load_file(path)
    assert sum(table.report.skipped.values()) == 1
    with pytest.raises(DataError, match="row 2"):
        data.load_file(path, strict=True)


def test_huge_field_is_a_clear_error(tmp_path: Path) -> None:
    big = "x" * (data.MAX_FIELD_CHARS + 10)
    with pytest.raises(DataError, match="row 2.*malformed"):
        data.load_file(write(tmp_path, "d.csv", f'text,label\n"{big}",a\nb,c\n'))


def test_data_hash_ignores_order_and_sees_content(tmp_path: Path) -> None:
    a = data.load_file(write(tmp_path, "a.csv", "text,label\nx,1\ny,2\n"))
    b = data.load_file(write(tmp_path, "b.csv", "text,label\ny,2\nx,1\n"))
    c = data.load_file(write(tmp_path, "c.csv", "text,label\ny,1\nx,1\nz,2\n"))
    assert a.data_hash() == b.data_hash() != c.data_hash()


def _table(texts: list[str], labels: list[str]) -> data.Table:
    rows = [(i + 1, t, lab) for i, (t, lab) in enumerate(zip(texts, labels, strict=True))]
    return data.build_table(rows, source="mem")


def test_split_is_content_hash_stable() -> None:
    texts = [f"message number {i}" for i in range(2000)]
    labels = ["a" if i % 5 else "b" for i in range(2000)]
    whole = data.split(_table(texts, labels))
    # Drop half the rows and add new ones: every surviving text keeps its split.
    fewer = data.split(_table([*texts[::2], "new one", "new two"], [*labels[::2], "a", "b"]))
    for part in ("train", "validation", "test"):
        before = set(getattr(whole, part).texts)
        after = set(getattr(fewer, part).texts)
        assert (after - {"new one", "new two"}) <= before


def test_split_fractions_and_stratification() -> None:
    texts = [f"text {i}" for i in range(5000)]
    labels = ["spam" if i % 10 == 0 else "ham" for i in range(5000)]
    splits = data.split(_table(texts, labels))
    assert len(splits.train) + len(splits.validation) + len(splits.test) == 5000
    assert 0.77 < len(splits.train) / 5000 < 0.83
    for part in (splits.train, splits.validation, splits.test):
        share = part.counts()["spam"] / len(part)
        assert 0.07 < share < 0.13
    assert not set(splits.train.texts) & set(splits.test.texts)


def test_bad_split_fractions() -> None:
    with pytest.raises(DataError, match="sum to 1"):
        data.split(_table(["a", "b"], ["x", "y"]), (0.5, 0.5, 0.5))


def test_unknown_task_without_data() -> None:
    with pytest.raises(DataError, match="no packaged corpus") as info:
        data.load_task("toxicity")
    assert info.value.hint and "--data" in info.value.hint


def test_non_utf8_after_a_bom_reports_the_real_byte_and_offset(tmp_path: Path) -> None:
    raw = b"\xef\xbb\xbftext,label\nok,x\ncaf\xe9,y\n"
    with pytest.raises(DataError) as info:
        data.load_file(write(tmp_path, "d.csv", raw))
    assert "byte 0xe9 at byte offset 22" in info.value.message
    assert info.value.row == 3


@pytest.mark.parametrize(
    "line",
    [
        '{"text": ' + "[" * 100_000 + "]" * 100_000 + ', "label": "x"}',  # RecursionError
        '{"text": 1' + "0" * 5000 + ', "label": "x"}',  # ValueError: int over 4300 digits
    ],
    ids=["deeply-nested", "huge-int"],
)
def test_hostile_jsonl_line_is_skipped_or_a_data_error(tmp_path: Path, line: str) -> None:
    good = '{"text": "a", "label": "x"}\n{"text": "b", "label": "y"}\n'
    path = write(tmp_path, "d.jsonl", good + line + "\n")
    table = data.load_file(path)
    assert len(table) == 2 and table.report.examples == {next(iter(table.report.skipped)): [3]}
    with pytest.raises(DataError) as info:
        data.load_file(path, strict=True)
    assert info.value.row == 3


def test_unreadable_file_is_a_data_error(tmp_path: Path) -> None:
    # A Unix socket exists and is no directory; it is refused before open() could fail.
    import socket

    path = tmp_path / "d.csv"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(DataError) as info:
            data.load_file(path)
    assert "not a regular file" in info.value.message


def test_fifo_is_refused_not_read(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="not a regular file"):
        data.load_file(fifo)


def test_packaged_task_refuses_other_labels() -> None:
    with pytest.raises(DataError, match="packaged labels ham, spam"):
        data.load_task("spam", labels=("no", "yes"))


def test_vader_row_numbers_do_not_repeat_across_sets() -> None:
    table = data.load_task("sentiment")
    rows = [r for rows in table.report.examples.values() for r in rows]
    assert len(rows) == len(set(rows))
    assert table.report.rows_read == 23703


def test_generated_groups_only_ever_train() -> None:
    texts = tuple(f"message number {i}" for i in range(300))
    groups = tuple("synthetic-modern/ham" if i % 2 else "enron-raw/x" for i in range(300))
    table = data.Table(
        texts=texts,
        labels=("ham",) * 300,
        label_names=("ham", "spam"),
        source="t",
        groups=groups,
    )
    splits = data.split(table)
    for part in (splits.validation, splits.test):
        assert part.texts and not any(g.startswith("synthetic-") for g in part.groups)
    assert sum(g.startswith("synthetic-") for g in splits.train.groups) == 150
