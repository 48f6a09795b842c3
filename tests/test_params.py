import pytest

from pearl.errors import PearlError
from pearl.params import load_params
from tests.conftest import ROOT


def test_default_params_load_and_are_typed():
    params = load_params(ROOT / "params.yaml")
    assert params.parse.min_freq == 2
    assert params.corpus.max_docs is None
    assert params.corpus.source == "wiki-vital"


def test_values_are_cast_the_way_dvc_writes_them(make_params):
    # `dvc exp run -S parse.min_freq=3` may reach the file as the string "3"
    assert make_params(parse__min_freq="3").parse.min_freq == 3
    assert make_params(corpus__max_docs=500).corpus.max_docs == 500
    assert make_params(corpus__max_docs=None).corpus.max_docs is None


def test_unknown_key_is_rejected_naming_it(make_params):
    with pytest.raises(PearlError) as error:
        make_params(parse__min_frek=3)
    assert "unknown key 'parse.min_frek'" in str(error.value)
    assert "\n" not in str(error.value)


def test_misspelt_key_names_the_typo_not_the_missing_key(tmp_path):
    text = (ROOT / "params.yaml").read_text().replace("  min_freq: 2", "  min_frek: 2")
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(PearlError, match="unknown key 'parse.min_frek'"):
        load_params(tmp_path / "params.yaml")


def test_engine_is_the_one_top_level_value(make_params):
    assert make_params(engine="ray").engine == "ray" and make_params().engine == "local"


def test_unknown_section_is_rejected(make_params):
    with pytest.raises(PearlError, match="unknown section 'pars'"):
        make_params(pars__min_freq=3)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"parse__min_freq": "abc"}, "parse.min_freq='abc'"),
        ({"parse__min_freq": 0}, "greater than or equal to 1"),
        ({"parse__backend": "stanza"}, "parse.backend='stanza'"),
        ({"corpus__max_docs": 2.5}, "corpus.max_docs=2.5"),
        ({"parse__min_words": 9}, "parse.min_words (9) exceeds parse.max_words (8)"),
        ({"corpus__source": "files"}, "corpus.files is empty"),
        ({"train__contrastive_weight": 0, "train__type_weight": 0, "model__teacher": None}, "leave no loss"),
        ({"engine": "spark"}, "engine='spark'"),
        ({"engine__workers": 2}, "'engine' is a value ('local'), not a section"),
        ({"ray__parse__workers": 0}, "ray.parse.workers=0"),
        ({"average__spelling_weight": 1.0}, "average.spelling_weight=1.0"),
        ({"seed": 1}, "expected section.key=value"),
        ({"pearl_base__batch_size": 1}, "pearl_base.batch_size=1"),
    ],
)
def test_wrong_values_fail_in_one_line(make_params, override, message):
    with pytest.raises(PearlError) as error:
        make_params(**override)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_missing_key_and_file_and_bad_yaml(tmp_path):
    text = (ROOT / "params.yaml").read_text().replace("  min_freq: 2", "")
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(PearlError, match="key 'parse.min_freq' is missing"):
        load_params(tmp_path / "params.yaml")
    with pytest.raises(PearlError, match="params file not found"):
        load_params(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("base: [unclosed\n")
    with pytest.raises(PearlError, match="not valid YAML"):
        load_params(tmp_path / "bad.yaml")
