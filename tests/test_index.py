"""pearl.index: search order, persistence, incremental adds, exact → HNSW, the manifest, refusals."""

import json
import random
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pearl.errors import PearlError
from pearl.index.encoder import ModelCard, StringEncoder
from pearl.index.phrase_index import FAISS, MANIFEST, ROWS, Index, IndexSettings

# Case variants: the same 3-gram set (Jaccard lower-cases) and the same vector under the tiny
# encoder's lower-casing tokenizer, so every one of them ties with "abc".
VARIANTS = {0: "ABC", 2: "abc", 4: "Abc", 5: "aBc", 7: "abC"}
TIED_NAMES = ["ABC", "xyz", "abc", "paris", "Abc", "aBc", "tokyo", "abC"]
NAMES = ["new york", "paris", "london", "berlin", "tokyo", "rome", "madrid", "lisbon", "oslo", "vienna"]
LONG = "ab " * 33_334  # 100K characters


class Counting:
    """An encoder that records every batch of texts it embeds."""

    def __init__(self, inner):
        self.inner, self.kind, self.card, self.batches = inner, inner.kind, inner.card, []

    def encode(self, texts):
        self.batches.append(list(texts))
        return self.inner.encode(texts)

    def truncated(self, texts):
        return self.inner.truncated(texts)


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(params=["string", "tiny-exact", "tiny-hnsw"])
def encoder_and_settings(request, tiny_text_encoder):
    if request.param == "string":
        return StringEncoder(), IndexSettings()
    return tiny_text_encoder, IndexSettings(exact_below=0 if request.param == "tiny-hnsw" else 100_000)


def test_ties_are_ordered_by_row_whatever_the_search_structure(encoder_and_settings):
    encoder, settings = encoder_and_settings
    index = Index.build(TIED_NAMES, encoder=encoder, settings=settings)
    want = "exhaustive-jaccard" if encoder.kind == "string" else "hnsw-ip" if settings.exact_below == 0 else "exact-ip"
    assert index.kind == want
    scores, rows = index.search(["abc", "aBC"], 5)
    assert rows.tolist() == [list(VARIANTS)] * 2
    assert np.allclose(scores, 1.0, atol=1e-5)
    scores, rows = index.search(["abc"], 3)  # ties cut at the k-th place: the first rows win
    assert rows.tolist() == [[0, 2, 4]]


def test_string_index_ranks_the_obvious_name_first():
    index = Index.build(NAMES, [n.upper() for n in NAMES], encoder=StringEncoder())
    scores, rows = index.search(["New York City", "pariss", "Lisboa", "qqqq"], 2)
    assert [index.ids[r] for r in rows[:3, 0]] == ["NEW YORK", "PARIS", "LISBON"]
    assert np.all(scores[:3, 0] > scores[:3, 1])
    assert scores[3].max() == 0.0  # nothing in common
    # the benchmark's String Distance: Jaccard of padded, lower-cased 3-gram sets
    grams = lambda s: {f" {s.lower()} "[i:i + 3] for i in range(len(s))}  # noqa: E731
    want = len(grams("pariss") & grams("paris")) / len(grams("pariss") | grams("paris"))
    assert scores[1, 0] == pytest.approx(want)


def test_k_larger_than_the_index_returns_every_name_and_k_0_fails(encoder_and_settings):
    encoder, settings = encoder_and_settings
    index = Index.build(NAMES[:4], encoder=encoder, settings=settings)
    scores, rows = index.search(["paris", "rome"], 50)
    assert scores.shape == rows.shape == (2, 4)
    assert sorted(rows[0].tolist()) == [0, 1, 2, 3]
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # best first
    assert index.search([], 3)[1].shape == (0, 3)
    with pytest.raises(PearlError, match="--k 0"):
        index.search(["paris"], 0)


def test_save_and_load_give_identical_search_results(encoder_and_settings, tmp_path):
    encoder, settings = encoder_and_settings
    index = Index.build([*NAMES, *VARIANTS.values()], encoder=encoder, settings=settings)
    index.save(tmp_path / "idx")
    assert {p.name for p in (tmp_path / "idx").iterdir()} == (
        {ROWS, MANIFEST} if encoder.kind == "string" else {ROWS, MANIFEST, FAISS})
    loaded = Index.load(tmp_path / "idx")
    assert (loaded.ids, loaded.names, loaded.kind, loaded.stats) == (index.ids, index.names, index.kind, index.stats)
    if encoder.kind != "string":
        assert np.array_equal(loaded.vectors, index.vectors)
    queries = ["abc", "new yorke", "Tokio", "x"]
    for got, want in zip(loaded.search(queries, 6), index.search(queries, 6)):
        assert np.array_equal(got, want)
    assert _listing(tmp_path) == sorted(["idx", *(f"idx/{p.name}" for p in (tmp_path / "idx").iterdir())])


def test_long_names_are_counted_without_transformers_warning_of_a_long_sequence(tiny_encoder, capfd, caplog):
    from pearl.index.encoder import load_encoder

    encoder = load_encoder(str(tiny_encoder))  # its own tokenizer: transformers warns once per tokenizer
    encoder.embedder.model.tokenizer.model_max_length = 64  # as a hub model's tokenizer says (the tiny one: none)
    assert encoder.truncated([LONG, "paris", "x " * 70]) == 2
    assert "Token indices sequence length" not in capfd.readouterr().err + caplog.text


def test_manifest_records_the_encoder_the_count_and_what_was_skipped(tiny_encoder, tiny_text_encoder,
                                                                     other_tiny_encoder, tmp_path):
    from pearl.index.encoder import load_encoder
    from pearl.index.phrase_index import pearl_version

    table = pl.DataFrame({"name": ["paris", None, "  ", LONG, "rome", ""]})
    index = Index.from_table(table, "name", encoder=tiny_text_encoder)
    index.save(tmp_path / "idx")
    manifest = json.loads((tmp_path / "idx" / MANIFEST).read_text())
    assert manifest["format"] == "pearl-index" and manifest["pearl_version"] == pearl_version()
    assert manifest["model"]["id"] == str(Path(tiny_encoder).resolve())
    assert manifest["model"]["kind"] == "embedding"
    assert re.fullmatch("[0-9a-f]{64}", manifest["model"]["sha256"])
    assert manifest["model"]["sha256"] != load_encoder(str(other_tiny_encoder)).card.sha256
    assert manifest["dimension"] == manifest["model"]["dimension"] == 32
    assert manifest["model"]["max_tokens"] == 64
    assert (manifest["count"], manifest["blank_skipped"], manifest["truncated"], manifest["rows_read"]) == (3, 3, 1, 6)
    assert manifest["index"]["kind"] == "exact-ip" and manifest["index"]["exact_below"] == 100_000
    assert index.ids == ["0", "3", "4"]  # table rows: blank rows keep their place in the numbering
    assert pl.read_parquet(tmp_path / "idx" / ROWS)["name"].to_list() == ["paris", LONG, "rome"]

    string = Index.from_table(table, "name", encoder=StringEncoder())
    string.save(tmp_path / "string")
    manifest = json.loads((tmp_path / "string" / MANIFEST).read_text())
    assert manifest["model"]["id"] == "string" and manifest["dimension"] == 0
    assert (manifest["count"], manifest["blank_skipped"], manifest["truncated"]) == (3, 3, 0)
    assert manifest["index"]["kind"] == "exhaustive-jaccard"
    assert string.search([LONG], 1)[1].tolist() == [[1]]


def test_add_embeds_only_the_new_names(tiny_text_encoder):
    counting = Counting(tiny_text_encoder)
    index = Index.from_table(pl.DataFrame({"name": NAMES[:3]}), "name", encoder=counting)
    assert counting.batches == [NAMES[:3]]
    added = index.add_table(pl.DataFrame({"name": [NAMES[3], None, NAMES[4]]}), "name")
    assert added == 2 and counting.batches == [NAMES[:3], [NAMES[3], NAMES[4]]]
    assert index.ids == ["0", "1", "2", "3", "5"]  # rows counted on across tables, the blank one included
    assert index.stats == {"rows_read": 6, "blank_skipped": 1, "truncated": 0}
    fresh = Index.build(NAMES[:3] + [NAMES[3], NAMES[4]], encoder=tiny_text_encoder)
    assert np.allclose(index.vectors, fresh.vectors, atol=1e-6)
    for got, want in zip(index.search(NAMES, 5), fresh.search(NAMES, 5)):
        assert np.allclose(got, want, atol=1e-6)


def test_cli_index_add_embeds_only_the_new_names(tiny_encoder, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pearl.cli import app
    from pearl.index.encoder import EmbeddingEncoder

    batches = []
    original = EmbeddingEncoder.encode
    monkeypatch.setattr(EmbeddingEncoder, "encode", lambda self, texts: batches.append(list(texts)) or original(self, texts))
    pl.DataFrame({"name": NAMES[:4]}).write_csv(tmp_path / "a.csv")
    pl.DataFrame({"name": NAMES[4:6]}).write_parquet(tmp_path / "b.parquet")
    runner = CliRunner()
    result = runner.invoke(app, ["index", "build", "--input", str(tmp_path / "a.csv"), "--column", "name",
                                 "--out", str(tmp_path / "idx"), "--model", str(tiny_encoder)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["index", "add", "--index", str(tmp_path / "idx"),
                                 "--input", str(tmp_path / "b.parquet"), "--column", "name"])
    assert result.exit_code == 0, result.output
    assert "+2 names → 6" in result.stdout
    assert batches == [NAMES[:4], NAMES[4:6]]
    loaded = Index.load(tmp_path / "idx")
    assert loaded.names == NAMES[:6] and loaded.ids == ["0", "1", "2", "3", "4", "5"]
    assert json.loads((tmp_path / "idx" / MANIFEST).read_text())["count"] == 6
    assert _listing(tmp_path) == ["a.csv", "b.parquet", "idx", f"idx/{FAISS}", f"idx/{MANIFEST}", f"idx/{ROWS}"]


def test_exact_becomes_hnsw_at_exact_below_and_finds_what_exact_finds(tiny_text_encoder, tmp_path):
    names = [f"{city} {i}" for i, city in enumerate(NAMES * 3)]
    queries = ["paris", "new york 3", "tokio", "rome 25", "oslo"]
    exact = Index.build(names, encoder=tiny_text_encoder)
    assert exact.kind == "exact-ip"

    settings = IndexSettings(exact_below=len(names) - 5)
    index = Index.build(names[:-7], encoder=tiny_text_encoder, settings=settings)
    assert index.kind == "exact-ip"
    index.add(names[-7:-6], [str(len(names) - 7)])  # count == exact_below - 1: still exact
    assert len(index) == settings.exact_below - 1
    assert index.kind == "exact-ip"
    index.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    loaded.add(names[-6:], [str(i) for i in range(len(names) - 6, len(names))])  # passes the cut
    assert loaded.kind == "hnsw-ip"
    loaded.save(tmp_path / "idx")
    assert json.loads((tmp_path / "idx" / MANIFEST).read_text())["index"]["kind"] == "hnsw-ip"
    hnsw = Index.load(tmp_path / "idx")
    assert hnsw.kind == "hnsw-ip" and hnsw._faiss.hnsw.efSearch == settings.hnsw_ef_search
    for got, want in zip(hnsw.search(queries, 7), exact.search(queries, 7)):
        assert np.allclose(got, want, atol=1e-6)
    # at exactly exact_below names a new index is HNSW
    assert Index.build(names[:4], encoder=tiny_text_encoder, settings=IndexSettings(exact_below=4)).kind == "hnsw-ip"


def test_duplicate_names_fail_naming_the_name_and_dedupe_keeps_the_first(tiny_text_encoder):
    names, ids = ["paris", "rome", "paris", "oslo"], ["p1", "r", "p2", "o"]
    for encoder in (StringEncoder(), tiny_text_encoder):
        with pytest.raises(PearlError, match=r"name 'paris' appears twice \(ids 'p1' and 'p2'\).*--dedupe"):
            Index.build(names, ids, encoder=encoder)
        index = Index.build(names, ids, encoder=encoder, dedupe=True)
        assert (index.names, index.ids) == (["paris", "rome", "oslo"], ["p1", "r", "o"])
        with pytest.raises(PearlError, match="name 'rome' appears twice"):  # against the names already there
            index.add(["rome"], ["r2"])
        assert index.add(["rome", "lima"], ["r2", "l"], dedupe=True) == 1 and index.ids[-1] == "l"
        with pytest.raises(PearlError, match="id 'r' appears twice"):
            index.add(["vienna"], ["r"])
        assert len(index) == 4  # failed adds change nothing
    with pytest.raises(PearlError, match="id 'x' appears twice"):
        Index.build(["a b", "c d"], ["x", "x"], encoder=StringEncoder(), dedupe=True)
    with pytest.raises(PearlError, match=r"row 1 has a name but no 'id'"):
        Index.from_table(pl.DataFrame({"name": ["a", "b"], "id": ["1", None]}), "name", "id", encoder=StringEncoder())
    with pytest.raises(PearlError, match=r"has no column 'nom'; its columns are: name, id"):
        Index.from_table(pl.DataFrame({"name": ["a"], "id": ["1"]}), "nom", encoder=StringEncoder())
    with pytest.raises(PearlError, match="no names to index"):
        Index.from_table(pl.DataFrame({"name": [None, " "]}, schema={"name": pl.String}), "name",
                         encoder=StringEncoder())


def test_load_refuses_another_model_and_another_version_or_format(tiny_encoder, other_tiny_encoder, tmp_path):
    Index.build(NAMES, model=str(tiny_encoder)).save(tmp_path / "idx")
    Index.build(NAMES, model="string").save(tmp_path / "str")
    assert Index.load(tmp_path / "idx", str(tiny_encoder)).names == NAMES
    for path, model in ((tmp_path / "idx", str(other_tiny_encoder)), (tmp_path / "idx", "string"),
                        (tmp_path / "str", str(tiny_encoder))):
        with pytest.raises(PearlError, match=r"was built with model .*query it with its own model, or rebuild"):
            Index.load(path, model)

    manifest = json.loads((tmp_path / "str" / MANIFEST).read_text())
    for key, value, message in (("pearl_version", "0.0.1", "built by pearl 0.0.1"),
                                ("format_version", 99, "v99"), ("format", "faiss", "'faiss'")):
        (tmp_path / "str" / MANIFEST).write_text(json.dumps({**manifest, key: value}))
        with pytest.raises(PearlError, match=f"{message}.*rebuild it with `pearl index build`") as error:
            Index.load(tmp_path / "str")
        assert "\n" not in str(error.value)
    (tmp_path / "str" / MANIFEST).write_text("{")
    with pytest.raises(PearlError, match="not valid JSON"):
        Index.load(tmp_path / "str")
    with pytest.raises(PearlError, match="not a pearl index"):
        Index.load(tmp_path / "nothing")
    (tmp_path / "idx" / FAISS).unlink()
    with pytest.raises(PearlError, match="damaged"):
        Index.load(tmp_path / "idx")


def test_save_replaces_an_index_whole_or_not_at_all(tiny_text_encoder, tmp_path, monkeypatch):
    import faiss

    old = Index.build(NAMES[:3], encoder=tiny_text_encoder)
    old.save(tmp_path / "idx")
    before = {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()}

    def broken_write(index, writer):
        raise OSError("disk full")

    monkeypatch.setattr(faiss, "write_index", broken_write)
    new = Index.build(NAMES, encoder=tiny_text_encoder)
    with pytest.raises(PearlError, match=r"idx could not be written \(disk full\); free space"):
        new.save(tmp_path / "idx")
    assert {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]  # no staging folder left behind
    monkeypatch.undo()

    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(PearlError, match="exists and was not written by pearl"):
        old.save(tmp_path / "other")
    assert _listing(tmp_path / "other") == ["notes.txt"]
    with pytest.raises(PearlError, match="does not exist; create it first"):
        old.save(tmp_path / "missing" / "idx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "other"]


def test_from_table_takes_pandas_like_polars(tiny_text_encoder):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"name": ["paris", None, "rome"], "code": ["P", "X", "R"]})
    index = Index.from_table(frame, "name", "code", encoder=StringEncoder())
    assert (index.names, index.ids, index.stats["blank_skipped"]) == (["paris", "rome"], ["P", "R"], 1)


def test_default_ids_after_dedupe_are_row_numbers_and_a_later_add_gets_new_ones():
    index = Index.build(["a", "a", "b"], encoder=StringEncoder(), dedupe=True)
    assert index.ids == ["0", "2"]
    assert index.add(["c"]) == 1 and index.ids == ["0", "2", "3"]
    assert index.stats["rows_read"] == 4


class FixedVectors:
    """An encoder that looks each text up in a table of unit vectors."""

    kind = "embedding"
    card = ModelCard("fixed", "embedding", "0" * 64, 2, "", None)

    def __init__(self, table: dict[str, tuple[float, float]]):
        self.table = table

    def encode(self, texts):
        return np.array([self.table[t] for t in texts], dtype=np.float32)

    def truncated(self, texts):
        return 0


def test_near_ties_go_by_row_under_the_benchs_tie_rule_for_every_encoder():
    from pearl.bench.similarity import TrigramJaccard

    # 2999 of the query's 3-grams, or its 3001 and one more: Jaccard 0.99892 and 0.99892 + 4e-7
    rng = random.Random(0)
    query = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3000))
    names = [query[:-1], query + "a", "zzz"]
    tied = TrigramJaccard().top_ties([query], names)[0]
    assert list(tied) == [0, 1]
    scores, rows = Index.build(names, encoder=StringEncoder()).search([query], 3)
    assert rows.tolist() == [[0, 1, 2]] and 0 < scores[0, 1] - scores[0, 0] < 1e-6

    # cosines 0.8000004 and 0.8000006: 6 decimals would split them, the tolerance ties them
    cosine = {"q": 1.0, "a": 0.8000004, "b": 0.8000006, "c": 0.5}
    encoder = FixedVectors({t: (c, np.sqrt(1 - c * c)) for t, c in cosine.items()})
    for settings in (IndexSettings(), IndexSettings(exact_below=0)):
        scores, rows = Index.build(["a", "b", "c"], encoder=encoder, settings=settings).search(["q"], 3)
        assert rows.tolist() == [[0, 1, 2]] and scores[0, 1] > scores[0, 0]


@pytest.mark.parametrize("key", ["model", "count", "index", "rows_read", "truncated", "model.sha256",
                                 "index.exact_below"])
def test_a_manifest_missing_a_key_is_a_one_line_error_naming_it(key, tmp_path):
    Index.build(NAMES, encoder=StringEncoder()).save(tmp_path / "idx")
    manifest = json.loads((tmp_path / "idx" / MANIFEST).read_text())
    *parents, last = key.split(".")
    del (manifest[parents[0]] if parents else manifest)[last]
    (tmp_path / "idx" / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(PearlError, match=rf"manifest.json has no {key!r}.*rebuild it with `pearl index build`") \
            as error:
        Index.load(tmp_path / "idx")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("change, named", [
    (lambda m: m["index"].update(extra=1), "has an unknown key 'index.extra'"),
    (lambda m: m["model"].update(extra=1), "has an unknown key 'model.extra'"),
    (lambda m: m.update(index=[]), "has 'index' that is not a JSON object"),
    (lambda m: [m.clear(), m.update(format=None)], "holds format None")])
def test_a_manifest_with_unknown_keys_or_of_another_shape_is_a_one_line_error(change, named, tmp_path):
    Index.build(NAMES, encoder=StringEncoder()).save(tmp_path / "idx")
    manifest = json.loads((tmp_path / "idx" / MANIFEST).read_text())
    change(manifest)
    (tmp_path / "idx" / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(PearlError, match=re.escape(named)) as error:
        Index.load(tmp_path / "idx")
    assert "\n" not in str(error.value)
    (tmp_path / "idx" / MANIFEST).write_text("[]")
    with pytest.raises(PearlError, match=r"manifest.json is not a pearl index manifest \(a JSON object\)"):
        Index.load(tmp_path / "idx")


def test_a_faiss_write_error_is_one_line_and_leaves_the_old_index_or_none(tiny_text_encoder, tmp_path, monkeypatch):
    from pearl.index import phrase_index

    Index.build(NAMES[:3], encoder=tiny_text_encoder).save(tmp_path / "idx")
    before = {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()}
    monkeypatch.setattr(phrase_index, "FAISS", "no-such-folder/index.faiss")  # the file cannot be opened
    new = Index.build(NAMES, encoder=tiny_text_encoder)
    for target in ("idx", "fresh"):
        with pytest.raises(PearlError, match=rf"{target} could not be written \(.*No such file") as error:
            new.save(tmp_path / target)
        assert "\n" not in str(error.value)
    assert {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]  # no staging folder, no half-written "fresh"


def test_a_disk_that_fills_up_while_faiss_writes_fails_the_save(tiny_text_encoder, tmp_path):
    """faiss's own file writer printed a failed close to stderr and returned: the index looked saved, one byte short."""
    import resource

    index = Index.build([f"{name} {i}" for i in range(20) for name in NAMES], encoder=tiny_text_encoder,
                        settings=IndexSettings(exact_below=0))  # HNSW: its graph makes index.faiss the largest file
    index.save(tmp_path / "probe")
    sizes = {p.name: p.stat().st_size for p in (tmp_path / "probe").iterdir()}
    assert sizes["index.faiss"] > max(size for name, size in sizes.items() if name != "index.faiss")
    limit = sizes["index.faiss"] - 1  # the last byte: only faiss closing the file writes it
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))  # writes past it fail with EFBIG, as on a full disk
    try:
        with pytest.raises(PearlError, match=r"idx could not be written \(.*File too large") as error:
            index.save(tmp_path / "idx")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert "\n" not in str(error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probe"]


def _rank_by_definition(row: np.ndarray, k: int) -> list[int]:
    """pearl.scores.rank's contract, one place at a time: the first column tied with the best score not yet ranked."""
    left, ranked = list(range(len(row))), []
    for _ in range(k):
        best = max(row[c] for c in left)
        ranked.append(next(c for c in left if row[c] >= best - 1e-6))
        left.remove(ranked[-1])
    return ranked


@pytest.mark.parametrize("kind", ["coarse ties", "near ties", "continuous", "unfound rows"])
def test_rank_keeps_its_contract_when_it_ranks_among_the_kth_bests_candidates(kind):
    from pearl.scores import rank

    rng = np.random.default_rng(7)
    for _ in range(40):
        shape, k = (int(rng.integers(1, 12)), int(rng.integers(1, 150))), None
        scores = {"coarse ties": lambda: rng.integers(0, 4, shape) / 3,
                  "near ties": lambda: rng.integers(0, 3, shape) * 6e-7,
                  "continuous": lambda: rng.random(shape),
                  "unfound rows": lambda: np.where(rng.random(shape) < 0.4, -np.inf, rng.integers(0, 3, shape))}[kind]()
        scores = scores.astype(np.float32)
        k = int(rng.integers(1, shape[1] + 1))
        assert rank(scores, k).tolist() == [_rank_by_definition(row, k) for row in scores]


def test_a_string_index_fits_its_3_grams_once_and_again_after_an_add(monkeypatch):
    from pearl.index import trigrams

    fitted = []
    original = trigrams.NameSets.__init__
    monkeypatch.setattr(trigrams.NameSets, "__init__", lambda self, names: (fitted.append(len(names)), original(self, names))[1])
    index = Index.build(NAMES, encoder=StringEncoder())
    first = index.search(["pariss", "Zürich Ørsted"], 3)
    second = index.search(["pariss", "Zürich Ørsted"], 3)
    assert fitted == [len(NAMES)] and all(np.array_equal(a, b) for a, b in zip(first, second))
    # a query's 3-grams that no name has still count in its union: the score is the pair's own Jaccard
    assert first[0][0, 0] == pytest.approx(trigrams.rowwise(["pariss"], ["paris"])[0])
    index.add(["zurich"])
    scores, rows = index.search(["Zürich Ørsted", "zurich"], 1)
    assert fitted == [len(NAMES), len(NAMES) + 1] and index.names[rows[1, 0]] == "zurich" and scores[1, 0] == 1.0


@pytest.mark.parametrize("k", [1, 3, 10])
def test_the_string_index_top_k_is_every_names_top_k_whether_or_not_its_candidates_prove_it(k, monkeypatch):
    from pearl.index import trigrams
    from pearl.scores import rank

    rng = random.Random(5)
    stems = ["san", "santa", "port", "new", "ville", "burg", "ford", "ham", "ton", "field", "mont", "bad"]
    names = list(dict.fromkeys(" ".join(rng.choice(stems) + rng.choice(stems) for _ in range(rng.randint(1, 3)))
                               for _ in range(3000)))
    queries = [n[:i] + n[i + 1:] for n in names[:300] for i in [rng.randrange(len(n))]]
    queries += ["", "x", "zzzzqqqq", "Ла-Массана", names[5].upper(), names[7] + " " + names[9]]
    sets = trigrams.NameSets(names)
    every = np.vstack([block for _, block in sets.blocks(queries)])  # each query against every name
    want_rows = rank(every, k)
    scores, rows = sets.top_k(queries, k)
    assert rows.tolist() == want_rows.tolist()
    assert np.array_equal(scores, np.take_along_axis(every, want_rows, axis=1))
    _, _, proven = sets._candidates(queries, k, trigrams._WIDEN * k + trigrams._MARGIN)
    assert proven.mean() > 0.5
    # candidates too few to prove most top ks: the queries left over are scored against every name, alike
    monkeypatch.setattr(trigrams, "_WIDEN", 1)
    monkeypatch.setattr(trigrams, "_MARGIN", 0)
    assert not sets._candidates(queries, k, k)[2].all()
    assert trigrams.NameSets(names).top_k(queries, k)[1].tolist() == want_rows.tolist()


def test_an_hnsw_index_is_the_same_bytes_at_any_thread_count():
    # faiss adds to an HNSW graph on every OpenMP thread: the verbs' index (and so their searches) must not depend on
    # how many there are (docs/measurements.md#hnsw-threads)
    import faiss

    from pearl.index.phrase_index import new_faiss_index

    vectors = np.random.default_rng(0).standard_normal((20_000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    built, threads = [], faiss.omp_get_max_threads()
    try:
        for count in (1, 2, 4):
            faiss.omp_set_num_threads(count)
            index = new_faiss_index(32, exact=False, settings=IndexSettings())
            index.add(vectors)
            built.append(faiss.serialize_index(index).tobytes())
    finally:
        faiss.omp_set_num_threads(threads)
    assert built[0] == built[1] == built[2]
