"""The product verbs end to end: `pearl link / join / cluster / types` and the Python API, on tiny
tables with known answers; the issue's bad inputs, each a one-line error that leaves nothing behind."""

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import pearl
from pearl.cli import app
from pearl.errors import PearlError
from pearl.index.encoder import StringEncoder
from pearl.index.phrase_index import MANIFEST, Index
from pearl.linking.link import SCHEMA as LINK_SCHEMA, link_chunks
from pearl.tables import read_table, text_column, write_table, write_table_chunks
from tests.test_export import export, tiny_model  # noqa: F401  (fixtures: a tiny PEARL export with a type head)

runner = CliRunner()
LONG = "ab " * 33_334  # 100K characters
DICTIONARY = pl.DataFrame({"id": ["NY", "PA", "LO", "BE"], "name": ["New York", "Paris", "London", "Berlin"],
                           "country": ["US", "FR", "UK", "DE"]})
# "" is written as a quoted empty string and None as an empty cell: the reader gives "" and null
MENTIONS = pl.DataFrame({"mention": ["new york city", "Pariss", "", None, "zzzz"]}, schema={"mention": pl.String})


def _jaccard(a: str, b: str) -> float:
    """The `string` encoder's score: Jaccard of the padded, lower-cased 3-gram sets."""
    grams = [{f" {s.lower()} "[i:i + 3] for i in range(len(s))} for s in (a, b)]
    return len(grams[0] & grams[1]) / len(grams[0] | grams[1])


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def one_line_error(result) -> str:
    """A handled PearlError: exit 1, nothing on stdout, one `error: …` line last on stderr."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # CliRunner turns crashes into 1 too
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    return errors[0]


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()} | {
        str(p.relative_to(folder)) + "/": b"" for p in folder.rglob("*") if p.is_dir()}


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tables")
    DICTIONARY.write_csv(folder / "dictionary.csv")
    MENTIONS.write_csv(folder / "mentions.csv")
    (folder / "empty.csv").write_bytes(b"")
    (folder / "latin1.csv").write_bytes("name,mention\nparis,paris\ncafé,café\n".encode("latin-1"))
    pl.DataFrame({"nom": ["paris"], "mot": ["paris"]}).write_csv(folder / "other_columns.csv")
    return folder


@pytest.fixture(scope="module")
def string_index(tables, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("indexes") / "cities"
    ok(invoke("index", "build", "--input", tables / "dictionary.csv", "--column", "name", "--id-column", "id",
              "--out", out, "--model", "string"))
    return out


@pytest.fixture
def out(tmp_path) -> Path:
    """An output folder that already holds a file of the user's."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    return folder


# ---- link -----------------------------------------------------------------------------------

def test_link_string_finds_the_obvious_names_and_keeps_every_mention(tables, string_index, out):
    stdout = ok(invoke("link", "--index", string_index, "--input", tables / "mentions.csv", "--out",
                       out / "links.parquet", "--k", "2", "--min-score", "0.3", "--string-weight", "0"))
    assert "5 mentions" in stdout
    links = pl.read_parquet(out / "links.parquet")
    assert dict(links.schema) == LINK_SCHEMA
    assert links.select("mention_row", "mention", "rank", "id", "name", "matched").rows() == [
        (0, "new york city", 1, "NY", "New York", True),  # Jaccard 8/13; nothing else reaches 0.3
        (1, "Pariss", 1, "PA", "Paris", True),  # 4/7
        (2, "", None, None, None, False),
        (3, None, None, None, None, False),
        (4, "zzzz", None, None, None, False),
    ]
    assert links["score"].to_list()[:2] == pytest.approx([8 / 13, 4 / 7])
    assert links["score"].to_list()[2:] == [None, None, 0.0]  # blank: no score; below the cut: its best
    assert sorted(listing(out)) == ["keep.txt", "links.parquet"]


def test_link_mixes_string_similarity_into_the_index_scores_and_a_typo_finds_its_name():
    from rapidfuzz import fuzz, utils

    from pearl.index.encoder import StringEncoder
    from pearl.linking.link import STRING_SCORER

    index = Index.build(["New York", "York", "Newark", "Paris", "Parish"], encoder=StringEncoder())
    alone = pearl.link(index, ["Yrok", "Pairs"], k=2, string_weight=0)
    mixed = pearl.link(index, ["Yrok", "Pairs"], k=2, string_weight=0.5)
    # a swap leaves "Yrok" no 3-gram of "York" (every name scores 0, the first row comes first); its letters are there
    assert alone.filter(pl.col("rank") == 1)["name"].to_list() == ["New York", "Paris"]
    assert mixed.filter(pl.col("rank") == 1)["name"].to_list() == ["York", "Paris"]
    jaccard = {(mention, name): score for mention, name, score in alone.select("mention", "name", "score").rows()}
    checked = 0
    for mention, name, score in mixed.select("mention", "name", "score").rows():
        string = getattr(fuzz, STRING_SCORER)(utils.default_process(mention), utils.default_process(name)) / 100
        if (mention, name) in jaccard:
            assert score == pytest.approx(0.5 * jaccard[mention, name] + 0.5 * string, abs=1e-6)
            checked += 1
    assert checked >= 2
    with pytest.raises(PearlError, match="--string-weight 1.5"):
        pearl.link(index, ["Pairs"], string_weight=1.5)


def test_string_evidence_reads_other_scripts_in_latin_letters_and_keeps_latin_ones_as_written():
    from pearl.clustering.cluster import cluster_labels
    from pearl.joining.select import Signals
    from pearl.latin import latin

    assert latin("Цофинген") == "Tsofingen" and latin("Königsee") == "Königsee" and latin("New York") == "New York"
    towns = ["Zofingen", "Ruhpolding", "Sanhuikou", "North Smithfield", "Königsee", "Konigsee"]
    index = Index.build(towns, encoder=StringEncoder())
    mentions = ["Цофинген", "三汇口", "Норт-Смітфілд", "Königsee"]
    linked = pearl.link(index, mentions, k=1)
    assert linked["name"].to_list() == ["Zofingen", "Sanhuikou", "North Smithfield", "Königsee"]
    assert linked["mention"].to_list() == mentions  # the output keeps each name as written
    # the join's signals of each mention (rows 6…) and its town
    signals = Signals(towns, mentions, None).of_pairs(np.array([6, 7, 8]), np.array([0, 2, 3]))
    assert (signals["char3"] > 0.3).all() and (signals["ratio"] > 0.75).all()  # as written: 0 and 0
    labels, _ = cluster_labels(["Zofingen", "Цофинген", "Ruhpolding"], StringEncoder(), None, 0.4)
    assert labels[0] == labels[1] != labels[2]


def test_link_k_beyond_the_index_gives_every_name_best_first(string_index):
    index = Index.load(string_index)
    links = pearl.link(index, ["paris", "  ", "berlin"], k=10)
    assert isinstance(links, pl.DataFrame)
    assert links.group_by("mention_row").len().sort("mention_row")["len"].to_list() == [4, 1, 4]
    # a blank mention is never searched: it has no score, not a best one
    assert links.filter(pl.col("mention_row") == 1).select("matched", "score").rows() == [(False, None)]
    paris = links.filter(pl.col("mention_row") == 0)
    assert paris["rank"].to_list() == [1, 2, 3, 4] and paris["id"][0] == "PA" and paris["score"][0] == 1.0
    assert paris["score"].is_sorted(descending=True)
    assert sorted(paris["id"]) == sorted(DICTIONARY["id"])
    with pytest.raises(PearlError, match="--k 0"):
        pearl.link(index, ["paris"], k=0)
    for nothing in ([], ["  ", None]):  # as cluster and join refuse it: the wrong file or column
        with pytest.raises(PearlError, match=r"^the mentions table's column 'mention' has no names: every cell is null"):
            pearl.link(index, nothing)


def test_link_with_a_tiny_model_is_deterministic_and_takes_pandas(tiny_text_encoder, tmp_path):
    pd = pytest.importorskip("pandas")
    index = Index.from_table(DICTIONARY, "name", "id", encoder=tiny_text_encoder)
    index.save(tmp_path / "idx")
    mentions = pd.DataFrame({"mention": ["PARIS", "new york", None, "BERLIN", "berlin"]})
    first = pearl.link(index, mentions, k=3)
    assert isinstance(first, pd.DataFrame)
    again = pearl.link(Index.load(tmp_path / "idx"), mentions, k=3)
    pd.testing.assert_frame_equal(first, again)
    best = first[first["rank"] == 1]
    # the tiny tokenizer lower-cases, so a case variant of a name has that name's vector
    assert best["id"].tolist() == ["PA", "NY", "BE", "BE"]
    assert np.allclose(best["score"], 1.0, atol=1e-5)
    assert first[first["mention_row"] == 2][["matched"]].values.tolist() == [[False]]



def test_a_model_link_pools_the_nearest_names_by_vector_and_by_3_grams_each_scored_by_its_cosine(tiny_text_encoder):
    from pearl.linking.link import pooled

    names = [f"{a} {b}" for a in ("north", "south", "port", "lake", "saint") for b in ("field", "ville", "haven", "mont")]
    index = Index.build(names, encoder=tiny_text_encoder)
    mentions = ["Норт-филд", "port haven", "sant mont"]
    scores, rows = pooled(index, mentions, 3)
    by_vector, by_string = index.search(mentions, 3)[1], index.search_strings(mentions, 3)[1]
    for i in range(len(mentions)):
        found = rows[i][rows[i] >= 0]
        assert sorted(found) == sorted(set(by_vector[i]) | set(by_string[i])) and len(found) == len(set(found))
        own = tiny_text_encoder.encode([mentions[i]])[0] @ index.vectors[found].T
        assert np.allclose(scores[i][rows[i] >= 0], own, atol=1e-5) and (scores[i][rows[i] < 0] == -np.inf).all()
    assert names.index("north field") in by_string[0]  # its letters find it, whatever the vectors do


def test_link_in_chunks_writes_what_one_pass_gives_and_nothing_when_a_chunk_fails(string_index, out):
    index = Index.load(string_index)
    whole = pearl.link(index, MENTIONS, k=2)
    chunks = list(link_chunks(index, MENTIONS, k=2, chunk=2))  # boundaries between a name, "" and None
    assert [c["mention_row"].unique().sort().to_list() for c in chunks] == [[0, 1], [2, 3], [4]]
    assert pl.concat(chunks).equals(whole)
    for suffix in ("csv", "parquet"):
        write_table(whole, out / f"whole.{suffix}")
        assert write_table_chunks(iter(chunks), out / f"chunked.{suffix}") == whole.height
        assert read_table(out / f"chunked.{suffix}").equals(read_table(out / f"whole.{suffix}"))
    assert (out / "chunked.csv").read_bytes() == (out / "whole.csv").read_bytes()

    def failing():
        yield chunks[0]
        raise OSError("disk full")

    with pytest.raises(PearlError, match="disk full"):
        write_table_chunks(failing(), out / "failed.parquet")
    assert sorted(listing(out)) == ["chunked.csv", "chunked.parquet", "keep.txt", "whole.csv", "whole.parquet"]
    with pytest.raises(PearlError, match="has no names"):  # checked when called, before any search
        link_chunks(lambda: pytest.fail("the index loaded before the mentions were checked"), MENTIONS[2:4])

# ---- join -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def orders(tables) -> Path:
    pl.DataFrame({"name": ["new york city", "Pariss", None, "zzzz", "berlin"], "qty": ["3", "1", "2", "5", "4"]}) \
        .write_csv(tables / "orders.csv")
    return tables / "orders.csv"


def test_join_inner_and_left_with_suffix_for_shared_columns(tables, orders, out):
    base = ("join", tables / "dictionary.csv", orders, "--left-on", "name", "--right-on", "name", "--model", "string",
            "--threshold", "0.4")
    assert "3 of 5 right rows matched" in ok(invoke(*base, "--out", out / "inner.csv"))
    ok(invoke(*base, "--how", "left", "--out", out / "left.parquet"))
    inner = pl.read_csv(out / "inner.csv", infer_schema=False)
    assert inner.columns == ["name", "qty", "id", "name_left", "country", "score", "matched"]
    assert inner.select("name", "qty", "id", "name_left", "country").rows() == [
        ("new york city", "3", "NY", "New York", "US"), ("Pariss", "1", "PA", "Paris", "FR"),
        ("berlin", "4", "BE", "Berlin", "DE")]
    left = pl.read_parquet(out / "left.parquet")
    assert left.columns == inner.columns
    assert left.select("name", "qty", "id", "name_left", "country", "matched").rows() == [
        ("new york city", "3", "NY", "New York", "US", True), ("Pariss", "1", "PA", "Paris", "FR", True),
        (None, "2", None, None, None, False), ("zzzz", "5", None, None, None, False),
        ("berlin", "4", "BE", "Berlin", "DE", True)]
    assert left["score"].to_list() == [pytest.approx(8 / 13), pytest.approx(4 / 7), None, 0.0, 1.0]
    assert sorted(listing(out)) == ["inner.csv", "keep.txt", "left.parquet"]


def test_join_explain_prints_the_histogram_and_the_cut(tmp_path, out):
    cities = ["Paris", "London", "Berlin", "Madrid", "Rome", "Vienna", "Lisbon", "Oslo", "Prague", "Dublin"]
    pl.DataFrame({"city": cities}).write_csv(tmp_path / "left.csv")
    noise = ["qqq", "xyz zyx", "kkkk", "jjj jjj", "wwvv", "fff ggg"]
    pl.DataFrame({"place": [c.upper() for c in cities[:6]] + noise + [None]}).write_csv(tmp_path / "right.csv")
    base = ("join", tmp_path / "left.csv", tmp_path / "right.csv", "--left-on", "city", "--right-on", "place",
            "--model", "string", "--explain", "--calibration-quantile", "0.9")
    stdout = ok(invoke(*base))
    lines = stdout.splitlines()
    assert lines[0].startswith("best score per right row: n=12, min 0.000")
    bins = [line for line in lines if line.startswith("  [")]
    assert len(bins) == 20 and sum(int(line.split(")")[1].split()[0]) for line in bins) == 12
    assert sum("← cut" in line for line in bins) == 1
    # the 0.9 quantile of each left name's Jaccard with its nearest other left name
    cut = np.quantile([max(_jaccard(a, b) for b in cities if b != a) for a in cities], 0.9)
    assert 0 < cut < 1 and lines[-1].startswith(f"cut {cut:.3f} (")
    assert lines[-1].endswith("): 6 rows matched, 6 below, 1 blank")
    cut_bin = next(line for line in bins if "← cut" in line)
    low, high = (float(x) for x in cut_bin.split("[")[1].split(")")[0].split(","))
    assert low <= cut < high
    assert sorted(listing(out)) == ["keep.txt"]  # --explain without --out writes nothing

    stdout = ok(invoke(*base, "--threshold", "0.5", "--out", out / "joined.parquet"))
    assert "cut 0.500 (given): 6 rows matched, 6 below, 1 blank" in stdout
    assert "6 of 13 right rows matched" in stdout
    assert pl.read_parquet(out / "joined.parquet")["city"].to_list() == cities[:6]


def test_join_with_a_precision_target_chooses_its_scoring_and_explains_it(tmp_path, out):
    left = ["apple inc", "microsoft corporation", "google llc", "amazon com inc", "john smith", "john smyth",
            "mary jones", "apple inc"]
    pl.DataFrame({"name": left, "id": [str(i) for i in range(1, 9)]}).write_csv(tmp_path / "left.csv")
    right = ["Apple Inc.", "Microsoft Corp", "Google", "jon smith", "Mary Jones", None, "zzz qqq"]
    pl.DataFrame({"name": right, "n": range(7)}).write_csv(tmp_path / "right.csv")
    base = ("join", tmp_path / "left.csv", tmp_path / "right.csv", "--left-on", "name", "--right-on", "name",
            "--model", "string", "--explain", "--how", "left")
    stdout = ok(invoke(*base, "--precision-target", "0.9", "--out", out / "joined.parquet"))
    assert "cut 0.500 (each join's estimated probability of being right): 5 rows matched, 1 below, 1 blank" in stdout
    assert "chosen for precision 0.9: " in stdout
    assert "estimated precision 0.900 and recall 0.750 (4.5 true joins of 6 right names)" in stdout
    # smith/smyth, both ways, strikes "jon smith" against "john smyth"
    assert "negative rules (token pairs that tell two left names apart): 2, striking 1 candidate pair" in stdout
    assert ok(invoke(*base, "--out", out / "default.parquet")) == stdout.replace("joined.parquet", "default.parquet")
    joined = pl.read_parquet(out / "joined.parquet")
    assert pl.read_parquet(out / "default.parquet").equals(joined)  # precision 0.9 is the default
    # a name repeated on the left joins its first row; "jon smith" is as near "john smyth" as its match
    assert joined.select("id", "score", "matched").rows() == [
        ("1", 1.0, True), ("2", 1.0, True), ("3", 1.0, True), ("5", 0.5, True), ("7", 1.0, True),
        (None, None, False), (None, 0.0, False)]


def test_join_python_api_on_pandas_and_with_a_tiny_model(tiny_text_encoder):
    pd = pytest.importorskip("pandas")
    left = DICTIONARY.to_pandas()
    right = pd.DataFrame({"name": ["BERLIN", None, "london"], "n": [1, 2, 3]})
    joined = pearl.join(left, right, "name", "name", how="left", threshold=0.99, encoder=tiny_text_encoder)
    assert isinstance(joined, pd.DataFrame)
    assert joined["id"].tolist()[::2] == ["BE", "LO"] and joined["id"].isna().tolist() == [False, True, False]
    assert joined["n"].tolist() == [1, 2, 3] and joined["matched"].tolist() == [True, False, True]
    again = pearl.join(left, right, "name", "name", how="left", threshold=0.99, encoder=tiny_text_encoder)
    pd.testing.assert_frame_equal(joined, again)
    inner = pearl.join(pl.from_pandas(left), pl.from_pandas(right), "name", "name", threshold=0.99,
                       encoder=StringEncoder())
    assert isinstance(inner, pl.DataFrame) and inner["id"].to_list() == ["BE", "LO"]
    with pytest.raises(PearlError, match="--how 'outer'"):
        pearl.join(left, right, "name", "name", how="outer", encoder=StringEncoder())


@pytest.mark.parametrize("scoring", [{"threshold": 0.3}, {"string_weight": 0.5}])
def test_a_fixed_scoring_join_gives_the_same_rows_a_chunk_at_a_time(tiny_text_encoder, monkeypatch, scoring):
    from pearl.joining import join

    right = pl.DataFrame({"name": ["BERLIN", None, "london", "Pariss", "  ", "berlin", "Lodnon"]})
    whole = pearl.join(DICTIONARY, right, "name", "name", how="left", encoder=tiny_text_encoder, **scoring)
    monkeypatch.setattr(join, "CHUNK", 2)  # blanks and nulls fall inside and between chunks
    assert_frame_equal(pearl.join(DICTIONARY, right, "name", "name", how="left", encoder=tiny_text_encoder,
                                  **scoring), whole)
    assert whole.height == right.height and whole["matched"].any()


def join_error(left: pl.DataFrame, right: pl.DataFrame, left_on: str, right_on: str, tmp_path: Path, out: Path) -> str:
    """`pearl join`'s one-line error on these tables, having checked it wrote nothing."""
    left.write_csv(tmp_path / "left.csv")
    right.write_csv(tmp_path / "right.csv")
    error = one_line_error(invoke("join", tmp_path / "left.csv", tmp_path / "right.csv", "--left-on", left_on,
                                  "--right-on", right_on, "--model", "string", "--threshold", "0.5",
                                  "--out", out / "j.csv"))
    assert sorted(listing(out)) == ["keep.txt"]
    return error


def test_join_never_overwrites_a_column_named_score_or_matched(tmp_path, out):
    left = pl.DataFrame({"name": ["Paris", "Rome"], "score": ["A+", "B"], "matched": ["x", "y"]})
    right = pl.DataFrame({"city": ["rome", "paris", "zzz"]})
    joined = pearl.join(left, right, "name", "city", how="left", threshold=0.5, encoder=StringEncoder())
    assert joined.columns == ["city", "name", "score_left", "matched_left", "score", "matched"]
    assert joined.select("score_left", "matched_left", "matched").rows() == [
        ("B", "y", True), ("A+", "x", True), (None, None, False)]
    error = join_error(left, right.with_columns(score=pl.lit("7")), "name", "city", tmp_path, out)
    assert "the right table has a column 'score', which the join adds: rename it" in error


def test_join_refuses_a_left_column_whose_suffixed_name_is_taken_before_loading_the_model(tmp_path, out):
    right = pl.DataFrame({"name": ["paris"], "name_left": ["x"]})
    with pytest.raises(PearlError, match="'name' of the left table would become 'name_left', which the right table "
                                         "has: rename one of them"):
        pearl.join(DICTIONARY, right, "name", "name", model=str(tmp_path / "no-such-model"))
    left = DICTIONARY.with_columns(name_left=pl.col("name"))
    with pytest.raises(PearlError, match="'name' of the left table would become 'name_left', which the left table "
                                         "has: rename one of them"):
        pearl.join(left, right.drop("name_left"), "name", "name", model=str(tmp_path / "no-such-model"))
    assert "would become 'name_left', which the right table has" in join_error(DICTIONARY, right, "name", "name",
                                                                              tmp_path, out)


def test_join_refuses_a_column_of_numbers_before_loading_the_model(tmp_path, out):
    names = pl.DataFrame({"name": ["Paris", "Rome"], "qty": ["3", " 1.5"]})
    for left, right in ((names, names.select(name="qty")), (names.with_columns(name=pl.col("qty")), names)):
        side = "left" if left["name"].to_list() == ["3", " 1.5"] else "right"
        error = join_error(left, right, "name", "name", tmp_path, out)
        assert f"the {side} table's column 'name' holds only numbers ('3', …), not names" in error
    with pytest.raises(PearlError, match="the left table's column 'n' holds only numbers"):  # a typed column too
        pearl.join(pl.DataFrame({"n": [1, 2]}), names, "n", "name", model=str(tmp_path / "no-such-model"))
    # `types` reads numbers as phrases: "1968" is a DATE
    assert text_column(pl.DataFrame({"t": ["1968", "7"]}), "t", "t", numbers=True).texts == ["1968", "7"]


# ---- cluster --------------------------------------------------------------------------------

def test_cluster_by_threshold_with_string(tmp_path, out):
    names = ["acme corp", "Acme Corp", "zeta labs", "acme corp", "", None, "acme corporation", "zeta lab",
             "unrelated thing", LONG]
    pl.DataFrame({"org": names, "row": list(range(len(names)))}).write_parquet(tmp_path / "orgs.parquet")
    stdout = ok(invoke("cluster", tmp_path / "orgs.parquet", "--column", "org", "--model", "string",
                       "--threshold", "0.4", "--out", out / "clusters.parquet"))
    assert "10 rows in 4 clusters" in stdout
    result = pl.read_parquet(out / "clusters.parquet")
    assert result.columns == ["org", "row", "cluster", "representative", "cluster_size"]
    # acme corp ~ Acme Corp (the same 3-grams), ~ acme corporation (8/17); zeta labs ~ zeta lab (7/10)
    assert result["cluster"].to_list() == [0, 0, 1, 0, None, None, 0, 1, 2, 3]  # numbered by first appearance
    assert result["cluster_size"].to_list() == [4, 4, 2, 4, None, None, 4, 2, 1, 1]
    assert result["representative"].to_list()[:4] == ["acme corp", "acme corp", "zeta labs", "acme corp"]
    for _, members in result.drop_nulls("cluster").group_by("cluster"):
        assert members["representative"].n_unique() == 1 and members["representative"][0] in members["org"]
    assert result["representative"][4:6].to_list() == [None, None]


def test_a_score_equal_to_the_cut_up_to_float_noise_reaches_it(tiny_text_encoder, tmp_path, out):
    pl.DataFrame({"org": ["acme corp", "Acme Corp", "zeta"]}).write_csv(tmp_path / "orgs.csv")
    ok(invoke("cluster", tmp_path / "orgs.csv", "--column", "org", "--model", "string", "--threshold", "1.0",
              "--out", out / "c.csv"))
    assert pl.read_csv(out / "c.csv")["cluster"].to_list() == [0, 0, 1]  # Jaccard 1.0 is at least 1.0
    orgs = pl.DataFrame({"org": ["acme corp", "acme corporation"]})
    assert pearl.cluster(orgs, "org", "string", threshold=8 / 17 + 1e-7)["cluster"].to_list() == [0, 0]  # 8/17
    assert pearl.cluster(orgs, "org", "string", threshold=8 / 17 + 1e-5)["cluster"].to_list() == [0, 1]
    # a name's cosine with itself is 1 − 1e-7 under float32 rounding, which --min-score 1 and --threshold 1 take
    names = list(DICTIONARY["name"]) + ["rome", "tokyo"]
    links = pearl.link(Index.build(names, encoder=tiny_text_encoder), names, k=1, min_score=1.0)
    assert links["matched"].all() and links["score"].min() < 1.0
    joined = pearl.join(pl.DataFrame({"n": names}), pl.DataFrame({"n": names}), "n", "n", threshold=1.0,
                        encoder=tiny_text_encoder)
    assert len(joined) == len(names)


def test_cluster_by_k_with_a_tiny_model(tiny_encoder, tmp_path, out):
    pd = pytest.importorskip("pandas")
    names = ["paris", "PARIS", "tokyo", "Paris", "", "tokyo", "berlin", "lima"]
    (tmp_path / "names.txt").write_text("\n".join(names) + "\n")
    ok(invoke("cluster", tmp_path / "names.txt", "--column", "text", "--model", tiny_encoder, "--k", "3",
              "--out", out / "clusters.csv"))
    result = pl.read_csv(out / "clusters.csv", schema_overrides={"text": pl.String})
    cluster = result["cluster"].to_list()
    assert cluster[0] == 0 and cluster[1] == cluster[3] == 0  # case variants: one vector under the tiny model
    assert cluster[2] == cluster[5] and cluster[4] is None
    seen = [c for c in dict.fromkeys(cluster) if c is not None]
    assert seen == list(range(3))  # ids by first appearance
    for _, members in result.drop_nulls("cluster").group_by("cluster"):
        assert members["representative"][0] in members["text"].to_list()
        assert members["cluster_size"].to_list() == [len(members)] * len(members)
    api = pearl.cluster(pd.DataFrame({"text": names}), "text", str(tiny_encoder), k=3)
    assert isinstance(api, pd.DataFrame)
    assert api["cluster"].tolist()[:4] == cluster[:4] and api["cluster"].isna().tolist()[4]


def test_cluster_auto_threshold_with_a_tiny_model(tiny_encoder, tmp_path, out, caplog):
    """The vectors' path of `--threshold auto`: its cut is logged, and names the tiny model gives one vector (case
    variants) share a cluster, as at any cut."""
    names = ["paris", "PARIS", "tokyo", "Paris", "berlin", "lima"]
    (tmp_path / "names.txt").write_text("\n".join(names) + "\n")
    with caplog.at_level(logging.INFO, logger="pearl.cluster"):
        ok(invoke("cluster", tmp_path / "names.txt", "--column", "text", "--model", tiny_encoder, "--threshold", "auto",
                  "--out", out / "clusters.csv"))
    assert "--threshold auto: " in caplog.text
    cluster = pl.read_csv(out / "clusters.csv")["cluster"].to_list()
    assert cluster[0] == cluster[1] == cluster[3]


def test_cluster_survives_kmeans_leaving_a_cluster_empty(monkeypatch):
    """With duplicate vectors (case variants under an uncased model) KMeans can warn "Number of
    distinct clusters found smaller than n_clusters" and return labels with a gap, e.g. 0, 2."""
    import sklearn.cluster

    class GappyKMeans:
        def __init__(self, n_clusters, **kwargs):
            pass

        def fit_predict(self, vectors):
            return np.array([2, 2, 0])

    class ThreeVectors:
        kind = "embedding"

        def encode(self, texts):
            return np.eye(3, dtype=np.float32)[[0, 0, 1][: len(texts)]]

    monkeypatch.setattr(sklearn.cluster, "KMeans", GappyKMeans)
    result = pearl.cluster(pl.DataFrame({"n": ["a", "A", "b"]}), "n", k=3, encoder=ThreeVectors())
    assert result["cluster"].to_list() == [0, 0, 1]
    assert result["representative"].to_list() == ["a", "a", "b"]
    assert result["cluster_size"].to_list() == [2, 2, 1]


def test_cluster_needs_exactly_one_of_k_and_threshold(tmp_path, out):
    pl.DataFrame({"n": ["a b", "c d"]}).write_csv(tmp_path / "n.csv")
    command = ("cluster", tmp_path / "n.csv", "--column", "n", "--model", "string", "--out", out / "c.csv")
    for extra, message in (((), "give exactly one of --k (a number of clusters) or --threshold"),
                           (("--k", "2", "--threshold", "0.5"), "give exactly one of --k"),
                           (("--k", "2"), "--k clusters vectors, and `string` has none"),
                           (("--k", "3"), "--k 3: between 1 and the 2 distinct names")):
        assert message in one_line_error(invoke(*command, *extra))
    assert sorted(listing(out)) == ["keep.txt"]


# ---- types (pearl.types.predict is tested in test_export.py; here only the command) ------------

def test_types_command_prints_or_writes_predict_types(export, tiny_encoder, tmp_path, out):
    from pearl.types.predict import predict_types

    want = predict_types(export, ["new york", "grown man"])
    stdout = ok(invoke("types", "new york", "grown man", "--model", export))
    assert stdout.splitlines() == [f"{r['text']}\t{r['lex_type']} {r['lex_prob']:.2f}\t{r['entity_type']} "
                                   f"{r['entity_prob']:.2f}" for r in want.iter_rows(named=True)]
    pl.DataFrame({"phrase": ["new york", None, "grown man"]}).write_csv(tmp_path / "p.csv")
    ok(invoke("types", "--input", tmp_path / "p.csv", "--column", "phrase", "--model", export,
              "--out", out / "types.parquet"))
    got = pl.read_parquet(out / "types.parquet")
    assert got.drop("lex_prob", "entity_prob", "label_prob").equals(want.drop("lex_prob", "entity_prob", "label_prob"))
    assert np.allclose(got["label_prob"].to_numpy(), want["label_prob"].to_numpy(), atol=1e-5)

    assert "phrase types need a PEARL export" in one_line_error(invoke("types", "x", "--model", tiny_encoder))
    assert "no phrases" in one_line_error(invoke("types", "--model", export))
    assert "its columns are: phrase" in one_line_error(invoke("types", "--input", tmp_path / "p.csv", "--model", export))
    assert "does not exist" in one_line_error(invoke("types", "x", "--model", export, "--out", out / "no" / "t.csv"))
    assert sorted(listing(out)) == ["keep.txt", "types.parquet"]


def test_link_join_and_cluster_check_scores_with_one_shared_rule():
    from pearl import scores
    from pearl.clustering import cluster as clustering
    from pearl.joining import join as joining
    from pearl.linking import link as linking

    for module in (linking, joining, clustering):
        assert module.check_score is scores.check_score


def test_verbs_are_lazy_attributes_of_pearl():
    from pearl.clustering.cluster import cluster
    from pearl.joining.join import join
    from pearl.linking.link import link

    assert (pearl.Index, pearl.link, pearl.join, pearl.cluster) == (Index, link, join, cluster)
    with pytest.raises(AttributeError):
        pearl.no_such_verb


# ---- bad inputs: one line on stderr, exit 1, nothing written -----------------------------------

def _commands(kind: str, table: Path, folder: Path, index: Path) -> tuple:
    """Each verb reading `table` (its names column `name`), writing into `folder`."""
    return {
        "index build": ("index", "build", "--input", table, "--column", "name", "--out", folder / "idx",
                        "--model", "string"),
        "index add": ("index", "add", "--index", index, "--input", table, "--column", "name"),
        "link": ("link", "--index", index, "--input", table, "--column", "name", "--out", folder / "l.parquet"),
        "join right": ("join", table.parent / "dictionary.csv", table, "--left-on", "name", "--right-on", "name",
                       "--model", "string", "--threshold", "0.5", "--out", folder / "j.csv"),
        "join left": ("join", table, table.parent / "dictionary.csv", "--left-on", "name", "--right-on", "name",
                      "--model", "string", "--threshold", "0.5", "--out", folder / "j.csv"),
        "cluster": ("cluster", table, "--column", "name", "--model", "string", "--threshold", "0.5",
                    "--out", folder / "c.parquet"),
    }[kind]


VERBS = ["index build", "index add", "link", "join right", "join left", "cluster"]


@pytest.fixture
def own_index(string_index, tmp_path) -> Path:
    return Path(shutil.copytree(string_index, tmp_path / "own-index"))


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("table, message", [
    ("other_columns.csv", "has no column 'name'; its columns are: nom, mot"),
    ("empty.csv", "empty.csv is empty: give a table with a header row"),
    ("latin1.csv", "latin1.csv: line 3 is not UTF-8 (byte 28 of the file)"),
    ("missing.csv", "missing.csv: no such file"),
    ("names.xlsx", "unknown table format .xlsx"),
])
def test_bad_tables_are_one_line_errors_that_write_nothing(verb, table, message, tables, own_index, out):
    before, index_before = listing(out), listing(own_index)
    error = one_line_error(invoke(*_commands(verb, tables / table, out, own_index)))
    assert message in error
    assert listing(out) == before and listing(own_index) == index_before


@pytest.mark.parametrize("verb", ["index build", "link", "join right", "cluster"])
def test_an_output_in_a_missing_folder_fails_before_any_work(verb, tables, own_index, out):
    error = one_line_error(invoke(*_commands(verb, tables / "dictionary.csv", out / "missing", own_index)))
    assert f"folder {out / 'missing'} does not exist; create it first" in error
    assert sorted(listing(out)) == ["keep.txt"]


@pytest.mark.parametrize("args, message", [
    (("link", "--k", "0"), "--k 0: ask for at least 1"),
    (("link", "--min-score", "1.5"), "--min-score 1.5: a cosine score lies in [-1, 1]"),
    (("link", "--min-score", "-1.01"), "--min-score -1.01: a cosine score lies in [-1, 1]"),
    (("join", "--threshold", "-1.5"), "--threshold -1.5: a cosine score lies in [-1, 1]"),
    (("join", "--threshold", "1.2"), "--threshold 1.2: a cosine score lies in [-1, 1]"),
    (("join", "--string-weight", "2"), "--string-weight 2.0: a weight in [0, 1]"),
    (("join", "--how", "outer"), "--how 'outer': inner or left"),
    (("join", "--candidates", "0"), "--candidates 0: at least 1"),
    (("join", "--precision-target", "1.5"), "--precision-target 1.5: a precision in (0, 1]"),
    (("join", "--precision-target", "0.9", "--string-weight", "0.2"), "leave out --threshold, --calibration-quantile and --string-weight"),
    (("cluster", "--k", "0"), "--k 0: between 1 and the 4 distinct names"),
    (("cluster", "--threshold", "1.5"), "--threshold 1.5: a cosine score lies in [-1, 1]"),
    (("cluster", "--threshold", "-2"), "--threshold -2.0: a cosine score lies in [-1, 1]"),
    (("link", "--out", "links.json"), "write .parquet or .csv"),
])
def test_bad_options_are_one_line_errors_that_write_nothing(args, message, tables, string_index, out):
    verb, *options = args
    table = tables / "dictionary.csv"
    command = {
        "link": ("link", "--index", string_index, "--input", table, "--column", "name", "--out", out / "l.csv"),
        "join": ("join", table, table, "--left-on", "name", "--right-on", "name", "--model", "string",
                 "--threshold", "0.5", "--out", out / "j.csv"),
        "cluster": ("cluster", table, "--column", "name", "--model", "string", "--out", out / "c.csv"),
    }[verb]
    options = [str(out / o) if o.endswith(".json") else o for o in options]
    assert message in one_line_error(invoke(*command, *options))
    assert sorted(listing(out)) == ["keep.txt"]


def test_scores_at_the_bounds_are_accepted(tables, string_index, out):
    table = tables / "dictionary.csv"
    ok(invoke("link", "--index", string_index, "--input", table, "--column", "name", "--out", out / "l.csv",
              "--min-score", "1"))
    assert pl.read_csv(out / "l.csv")["matched"].all()  # every name finds itself at 1.0
    ok(invoke("cluster", table, "--column", "name", "--model", "string", "--threshold", "-1", "--out",
              out / "c.csv"))
    assert pl.read_csv(out / "c.csv")["cluster"].to_list() == [0, 0, 0, 0]  # -1: merge everything


def test_null_and_blank_names_are_skipped_counted_and_kept(tmp_path, out):
    pl.DataFrame({"name": ["paris", None, " ", "rome"], "id": ["p", "n", "b", "r"]}).write_csv(tmp_path / "t.csv")
    ok(invoke("index", "build", "--input", tmp_path / "t.csv", "--column", "name", "--id-column", "id",
              "--out", out / "idx", "--model", "string"))
    manifest = json.loads((out / "idx" / MANIFEST).read_text())
    assert (manifest["count"], manifest["blank_skipped"], manifest["rows_read"]) == (2, 2, 4)
    assert Index.load(out / "idx").ids == ["p", "r"]
    ok(invoke("link", "--index", out / "idx", "--input", tmp_path / "t.csv", "--column", "name",
              "--out", out / "l.parquet"))
    links = pl.read_parquet(out / "l.parquet")
    assert links.filter(pl.col("rank").is_null() | (pl.col("rank") == 1)).select("mention_row", "id").rows() == [
        (0, "p"), (1, None), (2, None), (3, "r")]
    before = listing(out)
    (tmp_path / "blank.csv").write_text('name\n""\n" "\n\n')
    error = one_line_error(invoke("join", tmp_path / "t.csv", tmp_path / "blank.csv", "--left-on", "name",
                                  "--right-on", "name", "--model", "string", "--threshold", "0.5",
                                  "--out", out / "j.csv"))
    assert "the right table's column 'name' has no names: every cell is null or blank" in error
    error = one_line_error(invoke("cluster", tmp_path / "blank.csv", "--column", "name", "--model", "string",
                                  "--threshold", "0.5", "--out", out / "c.csv"))
    assert "column 'name' has no names: every cell is null or blank" in error
    error = one_line_error(invoke("index", "build", "--input", tmp_path / "blank.csv", "--column", "name",
                                  "--out", out / "idx2", "--model", "string"))
    assert "no names to index" in error
    assert listing(out) == before


def test_a_100k_character_cell_is_truncated_and_counted_not_a_crash(tiny_encoder, tmp_path, out):
    pl.DataFrame({"name": ["paris", LONG, "rome"]}).write_parquet(tmp_path / "long.parquet")
    for model, folder, truncated in ((tiny_encoder, "tiny", 1), ("string", "string", 0)):
        ok(invoke("index", "build", "--input", tmp_path / "long.parquet", "--column", "name", "--out", out / folder,
                  "--model", model))
        assert json.loads((out / folder / MANIFEST).read_text())["truncated"] == truncated
        ok(invoke("link", "--index", out / folder, "--input", tmp_path / "long.parquet", "--column", "name",
                  "--out", out / f"{folder}.parquet", "--k", "1"))
        assert pl.read_parquet(out / f"{folder}.parquet")["id"].to_list() == ["0", "1", "2"]
    ok(invoke("join", tmp_path / "long.parquet", tmp_path / "long.parquet", "--left-on", "name", "--right-on", "name",
              "--model", tiny_encoder, "--threshold", "0.99", "--out", out / "j.parquet"))
    assert pl.read_parquet(out / "j.parquet")["matched"].to_list() == [True] * 3
    ok(invoke("cluster", tmp_path / "long.parquet", "--column", "name", "--model", "string", "--threshold", "0.5",
              "--out", out / "c.parquet"))
    assert pl.read_parquet(out / "c.parquet")["cluster"].to_list() == [0, 1, 2]


def test_duplicate_names_and_ids_in_an_index(tmp_path, out):
    pl.DataFrame({"name": ["paris", "rome", "paris"], "id": ["p1", "r", "p2"]}).write_csv(tmp_path / "dup.csv")
    base = ("index", "build", "--input", tmp_path / "dup.csv", "--column", "name", "--out", out / "idx",
            "--model", "string")
    error = one_line_error(invoke(*base, "--id-column", "id"))
    assert "name 'paris' appears twice (ids 'p1' and 'p2')" in error and "--dedupe" in error
    assert sorted(listing(out)) == ["keep.txt"]
    ok(invoke(*base, "--id-column", "id", "--dedupe"))
    assert Index.load(out / "idx").ids == ["p1", "r"]
    before = listing(out)
    pl.DataFrame({"name": ["lima", "oslo"], "id": ["r", "o"]}).write_csv(tmp_path / "more.csv")
    error = one_line_error(invoke("index", "add", "--index", out / "idx", "--input", tmp_path / "more.csv",
                                  "--column", "name", "--id-column", "id"))
    assert "id 'r' appears twice" in error
    error = one_line_error(invoke("index", "add", "--index", out / "idx", "--input", tmp_path / "dup.csv",
                                  "--column", "name", "--id-column", "id"))
    assert "name 'paris' appears twice" in error
    assert listing(out) == before


def test_an_index_of_another_model_or_version_is_refused(tiny_encoder, other_tiny_encoder, tables, out, tmp_path):
    ok(invoke("index", "build", "--input", tables / "dictionary.csv", "--column", "name", "--out", out / "idx",
              "--model", tiny_encoder))
    link = ("link", "--index", out / "idx", "--input", tables / "dictionary.csv", "--column", "name",
            "--out", out / "l.csv")
    ok(invoke(*link, "--model", tiny_encoder))
    (out / "l.csv").unlink()
    before = listing(out)
    for other in (other_tiny_encoder, "string"):
        error = one_line_error(invoke(*link, "--model", other))
        assert f"was built with model {str(Path(tiny_encoder).resolve())!r}" in error and "rebuild" in error
    original = (out / "idx" / MANIFEST).read_text()
    manifest = json.loads(original)
    for key, value in (("pearl_version", "9.9.9"), ("format_version", 2)):
        (out / "idx" / MANIFEST).write_text(json.dumps({**manifest, key: value}))
        assert "rebuild it with `pearl index build`" in one_line_error(invoke(*link))
        assert "rebuild it with `pearl index build`" in one_line_error(
            invoke("index", "add", "--index", out / "idx", "--input", tables / "mentions.csv", "--column", "mention"))
    (out / "idx" / MANIFEST).write_text(original)
    assert listing(out) == before
    assert "not a pearl index" in one_line_error(invoke(*link[:2], tmp_path, *link[3:]))


def test_writes_are_atomic_when_the_writer_fails(tables, out, monkeypatch):
    pl.DataFrame({"old": [1]}).write_parquet(out / "c.parquet")
    before = listing(out)

    def half_written(self, path, **kwargs):
        Path(path).write_bytes(b"PAR1 half")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", half_written)
    result = invoke("cluster", tables / "dictionary.csv", "--column", "name", "--model", "string",
                    "--threshold", "0.5", "--out", out / "c.parquet")
    assert "c.parquet could not be written (disk full)" in one_line_error(result)
    assert listing(out) == before  # the old output intact, no temp file


def test_the_installed_command_keeps_errors_on_stderr_in_one_line(tables, string_index, tmp_path):
    pearl_command = Path(sys.executable).with_name("pearl")
    run = subprocess.run([str(pearl_command), "link", "--index", str(string_index), "--input",
                          str(tables / "mentions.csv"), "--column", "name", "--out", str(tmp_path / "l.csv")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert lines[-1] == "error: the mentions table has no column 'name'; its columns are: mention"
    assert "Traceback" not in run.stderr and sum(line.startswith("error") for line in lines) == 1
    assert list(tmp_path.iterdir()) == []
