from collections import Counter

import polars as pl
import pytest

from pearl.errors import PearlError
from pearl.labels import LEX_TYPES, shares
from pearl.parse import stage
from pearl.parse.extract import build_parser


def test_aggregate_sums_frequencies_and_takes_the_majority_lex_type():
    counts = Counter({
        ("the film", "NP"): 3,
        ("running", "VP"): 2, ("running", "NP"): 2,  # tie: NP comes first
        ("quickly", "ADVP"): 1, ("quickly", "ADJP"): 2,
        ("once", "ADVP"): 1,
    })
    df = stage.aggregate(counts, min_freq=2)
    assert df.columns == ["phrase", "lex_type", "freq"]
    assert df.rows() == [("running", "NP", 4), ("quickly", "ADJP", 3), ("the film", "NP", 3)]
    assert stage.aggregate(counts, min_freq=4)["phrase"].to_list() == ["running"]


def test_lex_distribution_sums_to_one():
    df = pl.DataFrame({"phrase": ["a", "b", "c", "d"], "lex_type": ["NP", "NP", "PP", "VP"], "freq": [2] * 4})
    assert shares(df["lex_type"], LEX_TYPES) == {"share_NP": 0.5, "share_VP": 0.25, "share_PP": 0.25, "share_ADVP": 0.0, "share_ADJP": 0.0}


def test_missing_benepar_model_says_how_to_install_it(make_params):
    with pytest.raises(PearlError) as error:
        build_parser(make_params(parse__backend="benepar", parse__benepar_model="benepar_en3").parse)
    message = str(error.value)
    assert "benepar.download('benepar_en3')" in message and "parse.backend=spacy" in message
    assert "\n" not in message


SENTENCES = [
    "Paris is the capital of France.",
    "The capital of France is Paris.",
    "Berlin is the capital of Germany.",
    "The New York Times was founded in 1851.",
    "The New York Times is a newspaper.",
    "Москва — столица России, and 東京 is the capital of Japan 🗾.",
    "Emoji 🎉🎉 and café, naïve, Zürich: the capital of Switzerland is Bern.",
]


@pytest.mark.slow
def test_stage_counts_are_the_same_with_one_or_two_processes(make_params, tmp_path):
    corpus = tmp_path / "sentences.parquet"
    pl.DataFrame({"doc_id": ["d"] * len(SENTENCES), "sent_id": range(len(SENTENCES)), "text": SENTENCES}).write_parquet(corpus)
    outputs = []
    for n in (1, 2):
        out = tmp_path / f"phrases{n}.parquet"
        stage.run(make_params(parse__n_process=n), source=corpus, output=out, metrics=tmp_path / f"m{n}.json")
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    df = pl.read_parquet(tmp_path / "phrases1.parquet")
    rows = {r["phrase"]: (r["lex_type"], r["freq"]) for r in df.iter_rows(named=True)}
    assert rows["The New York Times"] == ("NP", 2)
    assert rows["the capital"] == ("NP", 4)  # France, Germany, Japan, Switzerland
    assert rows["of France"] == ("PP", 2)
    assert "The capital" not in rows  # case is kept: a sentence-initial "The" is another string
    assert all(freq >= 2 for _, freq in rows.values())


def test_empty_sentence_file_is_an_error(make_params, tmp_path):
    corpus = tmp_path / "sentences.parquet"
    pl.DataFrame({"doc_id": [], "sent_id": [], "text": []}, schema={"doc_id": pl.String, "sent_id": pl.Int32, "text": pl.String}).write_parquet(corpus)
    with pytest.raises(PearlError, match="holds no sentences"):
        stage.run(make_params(parse__n_process=1), source=corpus, output=tmp_path / "p.parquet", metrics=tmp_path / "m.json")
    assert not (tmp_path / "p.parquet").exists()
