import gzip

import polars as pl
import pytest

from pearl.augment import aliases
from pearl.bench.run import build_context
from pearl.bench.texts import TASK_TEXTS, evaluation_texts
from pearl.errors import PearlError

PHRASES = ["Bombay", "Hail", "hail", "the Central Intelligence Agency", "CIA", "RUS", "Rus"]


def variants(pairs, blocked=frozenset(), cap=3, both_ways=True):
    return aliases.alias_variants(pairs, aliases.phrase_keys(PHRASES), set(blocked), cap, both_ways)


def test_a_pair_is_a_variant_of_the_corpus_phrase_on_either_side():
    found, counts = variants([("Mumbai", "Bombay"), ("Central Intelligence Agency", "CIA")])
    assert found == {"Bombay": ["Mumbai"], "CIA": ["Central Intelligence Agency"]}
    assert (counts.pairs, counts.matched, counts.leaked) == (2, 2, 0)


def test_one_word_sides_match_with_their_case_and_longer_ones_folded():
    found, _ = variants([("Hail", "Ha'il"), ("THE CENTRAL  intelligence agency", "CIA")])
    assert found == {"Hail": ["Ha'il"], "the Central Intelligence Agency": ["CIA"], "CIA": ["THE CENTRAL intelligence agency"]}
    assert "hail" not in found


def test_a_code_from_a_list_is_only_the_alias_of_its_long_form():
    found, counts = variants([("Russia Airport", "RUS")], both_ways=False)
    assert found == {} and counts.matched == 0
    found, _ = variants([("the central intelligence agency", "CIA")], both_ways=False)
    assert found == {"the Central Intelligence Agency": ["CIA"]}


def test_a_pair_with_a_side_in_a_test_or_tune_file_is_dropped_and_counted():
    found, counts = variants([("Mumbai", "Bombay"), ("Bombay", "Bambai")], blocked={"mumbai"})
    assert found == {"Bombay": ["Bambai"]} and counts.leaked == 1


def test_each_phrase_keeps_at_most_cap_aliases_in_the_sources_order():
    found, _ = variants([("Bombay", f"Bom{i}") for i in range(5)] + [("Bombay", "Bom0")], cap=2)
    assert found == {"Bombay": ["Bom0", "Bom1"]}


def test_identical_blank_and_overlong_pairs_are_skipped():
    found, counts = variants([("Bombay", "bombay"), ("Bombay", "  "), ("Bombay", "a b c d e f g h i")])
    assert found == {} and counts.matched == 0


def test_vera_keeps_acronyms_with_one_expansion_of_two_words_or_more(tmp_path):
    dictionary = tmp_path / "vera.dict.dz"
    entries = ["00-database-short\n     V.E.R.A.", "API\n       Application Program Interface (API)",
               "API\n       Associacao Portuguesa de Informatica (org., Portugal)",
               "APIC\n       Advanced Programmable Interrupt Controller (Intel, PIC)",
               "3GL\n       3rd Generation Language", "X\n       Xenon", "ABC\n       Another\n       Broken Case [slang]"]
    dictionary.write_bytes(gzip.compress("\n       \n".join(entries).encode()))
    assert aliases.vera_pairs(dictionary) == [("Advanced Programmable Interrupt Controller", "APIC"),
                                              ("3rd Generation Language", "3GL"), ("Another Broken Case", "ABC")]


def test_a_missing_or_corrupt_vera_file_is_a_one_line_error(tmp_path):
    with pytest.raises(PearlError, match="dict-vera.*augment.alias_sources"):
        aliases.vera_pairs(tmp_path / "none.dict.dz")
    (tmp_path / "bad.dict.dz").write_text("not gzip")
    with pytest.raises(PearlError, match="not a dictd"):
        aliases.vera_pairs(tmp_path / "bad.dict.dz")


def test_schwartz_hearst_finds_acronyms_defined_in_the_corpus():
    sentences = ["The Central Intelligence Agency (CIA) is in Langley.", "It was hot (e.g. in June).",
                 "He met the Secretary (kremlin) there."]
    assert aliases.schwartz_hearst_pairs(sentences) == [("Central Intelligence Agency", "CIA")]


def test_moby_gives_the_synonyms_of_wanted_headwords_only():
    pairs = aliases.moby_pairs({"abandon"})
    assert pairs and {head for head, _ in pairs} == {"abandon"} and ("abandon", "desert") in pairs


def test_geonames_pairs_leave_the_tune_tasks_cities_out():
    from pearl.bench.geonames_aliases import held_out_cities, load_cities

    pairs, cities = aliases.geonames_pairs(), load_cities()
    held_out_only = {c["name"] for c in held_out_cities(cities)} - {
        c["name"] for c in cities.values() if not aliases.is_held_out(c["geonameid"])}
    assert held_out_only and not {name for name, _ in pairs} & held_out_only
    assert ("Mumbai", "Bombay") in pairs


def test_airports_pair_each_name_with_its_iata_code():
    assert ("Los Angeles International Airport", "LAX") in aliases.airport_pairs()


def test_evaluation_texts_cover_every_task_and_fold_them(make_params, tmp_path):
    (tmp_path / "word-sim").mkdir()
    (tmp_path / "word-sim" / "EN-RW-STANFORD.txt").write_text("Cat \tDog\t8\n")
    ctx = build_context(make_params(bench__general_dir=str(tmp_path)), None, "")
    assert evaluation_texts(ctx, ("rw",)) == {"cat", "dog"}
    from pearl.bench.task_names import ALL_TASKS, TUNE_TASKS

    assert set(TASK_TEXTS) == set(ALL_TASKS + TUNE_TASKS)
    with pytest.raises(PearlError, match="bench.data_dir"):
        evaluation_texts(build_context(make_params(bench__data_dir=str(tmp_path)), None, ""), ("turney",))


@pytest.mark.slow
def test_the_augment_stage_writes_alias_variants_and_their_counts(make_params, tiny_encoder, tmp_path):
    import json

    from pearl.augment import stage

    phrases = ["Bombay", "Calcutta", "Central Intelligence Agency", "CIA", "a red house", "the old house", "abandon"]
    typed, sentences = tmp_path / "typed.parquet", tmp_path / "sentences.parquet"
    pl.DataFrame({"phrase": phrases, "label_id": [0] * len(phrases)}).write_parquet(typed)
    texts = ["The Central Intelligence Agency (CIA) is in Langley.", "Bombay has a red house and the old house."]
    pl.DataFrame({"doc_id": ["d"] * 2, "sent_id": [0, 1], "text": texts}).write_parquet(sentences)
    evaluation = tmp_path / "evaluation.parquet"  # as typing writes them: folded
    pl.DataFrame({"text": ["mumbai", "city", "house", "home"]}).write_parquet(evaluation)
    params = make_params(model__backbone=str(tiny_encoder), model__teacher=str(tiny_encoder), train__p_alias=0.1,
                         augment__alias_sources=["geonames", "schwartz_hearst", "moby"], augment__moby_min_cos=-1.0, augment__fasttext_min_count=1)
    stage.run(params, source=typed, sentences=sentences, output=tmp_path / "v.parquet", metrics=tmp_path / "m.json",
              evaluation=evaluation)
    alias = pl.read_parquet(tmp_path / "v.parquet").filter(pl.col("level") == "alias")
    by_method = {m: set(zip(g["phrase"], g["variant"])) for (m,), g in alias.group_by("method")}
    assert by_method["schwartz_hearst"] == {("CIA", "Central Intelligence Agency"), ("Central Intelligence Agency", "CIA")}
    assert ("Calcutta", "Kolkata") in by_method["geonames"]
    assert not {p for p, _ in by_method["geonames"]} & {"Bombay"}  # Mumbai is a tune text
    assert len(by_method["moby"]) <= 3 * len({p for p, _ in by_method["moby"]})
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["alias_geonames_leak_dropped"] > 0 and metrics["alias_moby_shortlisted"] == len(by_method["moby"])


def test_a_missing_alias_dictionary_fails_before_the_word_level_work(make_params, tmp_path, monkeypatch):
    from pearl.augment import stage

    typed, sentences = tmp_path / "typed.parquet", tmp_path / "sentences.parquet"
    pl.DataFrame({"phrase": ["Bombay", "CIA"], "label_id": [0, 0]}).write_parquet(typed)
    pl.DataFrame({"doc_id": ["d"], "sent_id": [0], "text": ["Bombay."]}).write_parquet(sentences)
    evaluation = tmp_path / "evaluation.parquet"
    pl.DataFrame({"text": ["cat", "dog"]}).write_parquet(evaluation)
    monkeypatch.setattr(stage, "CharAugmenter", lambda *args: pytest.fail("the word-level work ran first"))
    params = make_params(augment__alias_sources=["vera"], augment__vera_path=str(tmp_path / "vera.dict.dz"),
                         train__p_alias=0.1)
    with pytest.raises(PearlError, match="vera.dict.dz is missing: run `bash scripts/setup.sh`"):
        stage.run(params, source=typed, sentences=sentences, output=tmp_path / "v.parquet", metrics=tmp_path / "m.json",
                  evaluation=evaluation)
    assert not (tmp_path / "v.parquet").exists()
