"""Augmentation at the three levels, on the issue's expected behaviours and on hard inputs."""

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from pearl.augment import phrase_level, token_level
from pearl.augment.char_level import CharAugmenter, keyboard_neighbours
from pearl.errors import MissingModelError, PearlError
from tests.conftest import ROOT

HARD = ["", "a", "x y", "aa", "New", "東京", "Москва", "🎉🎉", "a" * 500, " ".join(["word"] * 200), "3.14"]


def test_keyboard_neighbours_are_adjacent_keys():
    near = keyboard_neighbours()
    assert set(near["s"]) == set("adwezx") and set(near["q"]) == set("wa") and set(near["m"]) == set("nkj")


def test_char_variants_of_the_new_york_times_are_typos():
    variants = CharAugmenter(seed=0).variants("The New York Times")
    assert set(variants) == {"char_swap", "char_drop", "char_insert", "char_keyboard"}
    for method, v in variants.items():
        assert v != "The New York Times" and v.split()  # same words count give or take a letter
        assert abs(len(v) - len("The New York Times")) <= 1
    assert len(variants["char_drop"]) == len("The New York Times") - 1


def test_char_augmenter_is_seeded():
    phrases = ["The New York Times", "central bank", "in 1968"]
    first = [CharAugmenter(seed=7).variants(p) for p in phrases]
    again = [CharAugmenter(seed=7).variants(p) for p in phrases]
    assert first == again


@pytest.mark.parametrize("phrase", HARD)
def test_char_methods_never_return_identity_or_empty(phrase):
    variants = CharAugmenter(seed=1).variants(phrase)
    assert all(v and v.strip() and v != phrase for v in variants.values())
    if phrase in ("", "🎉🎉", "3.14"):
        assert variants == {}  # no letters: nothing to change
    if phrase == "a":
        assert "char_drop" not in variants and "char_swap" not in variants


def test_token_swap():
    rng = np.random.default_rng(0)
    assert token_level.swap_adjacent("New York", rng) == "York New"
    assert token_level.swap_adjacent("York", rng) is None
    assert token_level.swap_adjacent("very very", rng) is None
    assert token_level.swap_adjacent("The New York Times", rng) in {"New The York Times", "The York New Times", "The New Times York"}


def test_synonym_replacement_keeps_names_and_never_returns_identity():
    synonyms = {"newspaper": ["paper", "newspaper"], "times": ["multiplication"]}
    rng = np.random.default_rng(0)
    assert token_level.replace_with_synonyms("New York newspaper", synonyms, rng, 3) == ["New York paper"]
    assert token_level.replace_with_synonyms("The New York Times", synonyms, rng, 3) == []  # capitalised: a name


def test_wordnet_synonyms_from_the_installed_data():
    found = token_level.wordnet_synonyms({"newspaper", "big", "zzzz"}, ROOT / "nltk_data")
    assert "paper" in found["newspaper"] and "large" in found["big"] and "zzzz" not in found


def test_missing_wordnet_is_a_one_line_error(tmp_path):
    (tmp_path / "corpora" / "wordnet").mkdir(parents=True)
    (tmp_path / "corpora" / "wordnet" / "lexnames").write_text("00\tadj.all\t3\n")  # the rest missing
    for folder in (tmp_path / "nowhere", tmp_path):
        with pytest.raises(PearlError, match="WordNet is not in"):
            token_level.wordnet_synonyms({"big"}, folder)


def test_wordnet_reads_the_synsets_nltks_own_reader_reads():
    import nltk

    words = ["newspaper", "big", "run", "New_York", "dog"]
    ours = token_level.load_wordnet(ROOT / "nltk_data")
    nltk.data.path.insert(0, str(ROOT / "nltk_data"))
    try:
        from nltk.corpus import wordnet

        assert [ours.synsets(word) for word in words] == [wordnet.synsets(word) for word in words]
    finally:
        nltk.data.path.remove(str(ROOT / "nltk_data"))


def test_fasttext_on_a_tiny_corpus_is_deterministic_and_finds_neighbours():
    sentences = token_level.corpus_tokens(
        ["The newspaper printed the news.", "A newspaper prints news daily.", "The paper printed stories."] * 30
    )
    first = token_level.train_fasttext(sentences, seed=3, dim=16, epochs=3, min_count=2)
    again = token_level.train_fasttext(sentences, seed=3, dim=16, epochs=3, min_count=2)
    assert np.array_equal(first["newspaper"], again["newspaper"])
    synonyms = token_level.embedding_synonyms(first, {"newspaper", "absent"}, threshold=0.0, topn=3)
    assert "absent" not in synonyms and len(synonyms["newspaper"]) == 3


def test_vectors_file_errors(tmp_path):
    with pytest.raises(MissingModelError, match="augment.fasttext_path"):
        token_level.load_vectors(tmp_path / "missing.vec", 10)
    (tmp_path / "v.txt").write_text("x")
    with pytest.raises(PearlError, match="expected a .vec or .bin"):
        token_level.load_vectors(tmp_path / "v.txt", 10)
    (tmp_path / "v.vec").write_text("2 3\nnews 1 0 0\npaper 0.9 0.1 0\n")
    vectors = token_level.load_vectors(tmp_path / "v.vec", 10)
    assert token_level.embedding_synonyms(vectors, {"news"}, 0.75, 5) == {"news": ["paper"]}


def test_abbreviation_forms_of_a_name():
    forms = phrase_level.abbreviations("The New York Times")
    assert {"New York Times", "NYT", "NY Times"} <= set(forms)
    assert phrase_level.abbreviations("United States of America") == ["USA", "US America"]
    assert phrase_level.abbreviations("central bank") == []  # no name, no article: nothing
    for phrase in HARD:
        assert all(f and f != phrase for f in phrase_level.abbreviations(phrase))


def test_mined_paraphrases_share_the_head_and_are_close():
    phrases = ["the capital", "the capital city", "the city", "a big city", "the river"]
    vectors = np.array([[1, 0, 0], [0.1, 1, 0], [0, 1, 0.05], [0, 0.95, 0.3], [0, 0, 1]], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    heads = ["capital", "city", "city", "city", "river"]
    found = phrase_level.mined_paraphrases(phrases, heads, vectors, min_cos=0.9, limit=2)
    assert found["the city"] == ["the capital city", "a big city"]
    assert "the capital" not in found and "the river" not in found  # no close same-head phrase


def test_mined_paraphrases_tied_within_float_noise_go_to_the_earlier_phrase():
    # two casings of one phrase share a vector in an uncased backbone; BLAS threads (or the Ray
    # engine's nodes) may still give the later one a cosine 5e-7 higher, which must not decide
    phrases = ["according to the 2024 census", "According to the 2020 census", "according to the 2020 census"]
    angle = 0.5
    vectors = np.array([[1, 0], [np.cos(angle), np.sin(angle)], [np.cos(angle - 1e-6), np.sin(angle - 1e-6)]],
                       dtype=np.float32)
    assert vectors[2] @ vectors[0] > vectors[1] @ vectors[0]
    found = phrase_level.mined_paraphrases(phrases, ["census"] * 3, vectors, min_cos=0.8, limit=1)
    assert found["according to the 2024 census"] == ["According to the 2020 census"]
    at_the_cut = phrase_level.mined_paraphrases(phrases, ["census"] * 3, vectors,
                                                min_cos=float(vectors[1] @ vectors[0]) + 5e-7, limit=1)
    assert at_the_cut["according to the 2024 census"] == ["According to the 2020 census"]


def test_the_head_is_the_root_of_the_phrases_parse_not_its_last_word(nlp_parser):
    phrases = ["the capital of France", "The New York Times", "a member of the board", "in 1968", "", "42"]
    assert phrase_level.head_words(phrases, nlp_parser, 8) == ["capital", "times", "member", "in", "", ""]


def test_wordnet_lemmas_of_single_sense_multiword_phrases():
    wordnet = token_level.load_wordnet(ROOT / "nltk_data")
    found = phrase_level.wordnet_paraphrases(["World War II", "the Soviet Union", "the sum", "river", "New Yrok"], wordnet)
    assert found["World War II"] == ["World War 2", "Second World War"]
    assert "USSR" in found["the Soviet Union"] and "the Soviet Union" not in found["the Soviet Union"]
    assert set(found) == {"World War II", "the Soviet Union"}  # one word, several senses or no lemma: nothing


def test_parrot_filters():
    assert not phrase_level.keep_paraphrase("The New York Times", "the new york times.", 0.9)
    assert not phrase_level.keep_paraphrase("The New York Times", "The New York Tims", 0.9)
    assert phrase_level.keep_paraphrase("The New York Times", "The Times", 0.9)
    assert not phrase_level.keep_paraphrase("x", "word " * 40, 0.9)


def _tiny_classifier(directory, tokenizer, vocab_size, bias):
    """A random-bodied classifier whose logits are its bias (zero output weights)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, num_labels=len(bias))
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


def test_parrot_path_with_tiny_random_models(tmp_path, make_params):
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    from tests.conftest import _char_wordpiece_tokenizer

    tokenizer, vocab_size = _char_wordpiece_tokenizer()
    config = T5Config(vocab_size=vocab_size, d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=2,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=3)
    torch.manual_seed(2)  # a random T5 that writes short strings ("q", "q q"): seed 0 only writes runaway ones
    T5ForConditionalGeneration(config).save_pretrained(tmp_path / "t5")
    tokenizer.save_pretrained(tmp_path / "t5")
    # adequacy logits (contradiction, neutral, entailment) = (0, 9, 2): Parrot reads entailment
    # against contradiction only, softmax(0, 2)[1] = 0.881, whatever the neutral logit
    adequacy = _tiny_classifier(tmp_path / "adequacy", tokenizer, vocab_size, [0.0, 9.0, 2.0])
    fluency = _tiny_classifier(tmp_path / "fluency", tokenizer, vocab_size, [0.0, 3.0])  # 0.953 fluent

    def parrot(**changes):
        settings = make_params(**{"augment__parrot_model": str(tmp_path / "t5"), "augment__parrot_adequacy_model": adequacy,
                                  "augment__parrot_fluency_model": fluency, "augment__parrot_beams": 4,
                                  "augment__parrot_returns": 4, **changes}).augment
        return phrase_level.ParrotParaphraser(settings, "cpu")

    phrases = ["The New York Times", "a red car", "東京"]
    lenient = parrot(augment__parrot_adequacy_threshold=0.88, augment__parrot_fluency_threshold=0.95)
    assert lenient.adequacy(["a"], ["b"])[0] == pytest.approx(0.8808, abs=1e-4)
    assert lenient.fluency(["a"])[0] == pytest.approx(0.9526, abs=1e-4)
    found = lenient.paraphrase(phrases, batch_size=2)
    assert found  # the random T5 does write something that passes
    for phrase, paraphrases in found.items():
        assert all(phrase_level.keep_paraphrase(phrase, p, 0.9) for p in paraphrases)
        distances = [Levenshtein.distance(phrase.lower(), p.lower()) for p in paraphrases]
        assert distances == sorted(distances, reverse=True)  # most diverse first
    assert parrot(augment__parrot_adequacy_threshold=0.89).paraphrase(phrases, batch_size=2) == {}
    assert parrot(augment__parrot_fluency_threshold=0.96).paraphrase(phrases, batch_size=2) == {}
    with pytest.raises(PearlError, match="augment.parrot_fluency_model=.*missing.: no such folder"):
        parrot(augment__parrot_fluency_model=str(tmp_path / "missing"))


def test_a_backbone_that_cannot_load_fails_before_the_word_level_work(make_params, tmp_path, monkeypatch):
    """The word-level variants and fastText come first in the stage: 25 s here before the model was looked up."""
    import polars as pl

    from pearl.augment import stage

    typed = tmp_path / "typed.parquet"
    pl.DataFrame({"phrase": ["the old city"], "label_id": [0]}).write_parquet(typed)
    monkeypatch.setattr(stage, "build_variants", lambda *args: pytest.fail("the variants were built first"))
    with pytest.raises(MissingModelError, match="model.backbone"):
        stage.run(make_params(model__backbone=str(tmp_path / "no-such-model")), source=typed,
                  sentences=tmp_path / "sentences.parquet", output=tmp_path / "variants.parquet",
                  metrics=tmp_path / "augment.json")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["typed.parquet"]
