"""Each benchmark metric on toy data with a known answer; constant or wrong predictions must fail."""

import json

import numpy as np
import pytest

from pearl.bench import data, tasks
from pearl.bench.metrics import choice_accuracy, pearson, tie_credit
from pearl.bench.probe import ProbeSettings, probe_accuracy
from pearl.bench.similarity import TrigramJaccard
from pearl.bench.tasks import BenchContext
from pearl.errors import PearlError


class TableEmbedder:
    """Vectors looked up in a table (normalised); unknown strings get `default`."""

    def __init__(self, table=None, default=None):
        self.table, self.default = table or {}, default

    def embed(self, texts):
        rows = np.array([self.table.get(t, self.default) for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


CONSTANT = TableEmbedder(default=[1.0, 0.0, 0.0, 0.0])


def one_hot(i, dim=64):
    v = np.full(dim, 0.01)
    v[i % dim] = 1.0
    return v


def context(tmp_path, embedder, **kw):
    settings = dict(
        data_dir=tmp_path, short_text_dir=tmp_path, general_dir=tmp_path, tune_dir=tmp_path, burt_dir=tmp_path, seed=0,
        probe=ProbeSettings(lrs=(1e-2,), batch_size=32, max_epochs=60, patience=8),
        ppdb_seeds=2, atis_seeds=2, kmeans_inits=5, kb={"yago": None, "umls": None},
        load_embedder=None if embedder is None else lambda: embedder,
    )
    settings.update(kw)
    return BenchContext(**settings)


# --- turney ------------------------------------------------------------------------------

TURNEY = [
    ("double star", "binary", "double", "star", ["dual", "lumen", "neutralism", "keratoplasty"]),
    ("bass fiddle", "contrabass", "bass", "fiddle", ["pitch", "violin", "speedway", "snood"]),
]


@pytest.fixture
def turney_dir(tmp_path):
    (tmp_path / "turney").mkdir()
    (tmp_path / "turney" / "turney.txt").write_text(
        "\n".join(" | ".join([q, g, w1, w2, *d]) for q, g, w1, w2, d in TURNEY) + "\n"
    )
    return tmp_path


def test_turney_excludes_the_bigrams_own_words(turney_dir):
    items = data.load_turney(turney_dir)
    assert items[0].candidates == ["binary", "dual", "lumen", "neutralism", "keratoplasty"]


def test_turney_known_answer_constant_and_wrong(turney_dir):
    oracle, wrong = {}, {}
    for i, (q, g, w1, w2, distractors) in enumerate(TURNEY):
        oracle[q] = oracle[g] = wrong[q] = wrong[distractors[0]] = one_hot(10 * i)
        # the bigram's own words look exactly like the bigram: they must not count as candidates
        oracle[w1] = oracle[w2] = wrong[w1] = wrong[w2] = one_hot(10 * i)
        for j, d in enumerate(distractors):
            oracle.setdefault(d, one_hot(10 * i + j + 1))
        wrong.setdefault(g, one_hot(10 * i + 7))
        for j, d in enumerate(distractors[1:]):
            wrong.setdefault(d, one_hot(10 * i + j + 2))
    assert tasks.turney(context(turney_dir, TableEmbedder(oracle)))["score"] == 100.0
    assert tasks.turney(context(turney_dir, CONSTANT))["score"] == 20.0  # five-way tie: 1/5
    assert tasks.turney(context(turney_dir, TableEmbedder(wrong)))["score"] == 0.0


# --- bird ---------------------------------------------------------------------------------

def test_bird_pearson_known_answer(tmp_path):
    (tmp_path / "bird").mkdir()
    scores = [0.1, 0.4, 0.7, 0.9]
    header = "pair\tterm1\tterm2\tterm2: unigram or bigram\tsource\trelation\trelatedness score\tpos\n"
    rows = "".join(f"(a{i}, b{i})\ta{i}\tb{i}\tunigram\tx\tNone\t{s}\tn-n\n" for i, s in enumerate(scores))
    (tmp_path / "bird" / "bird.txt").write_text(header + rows)
    # cos(a_i, b_i) = s_i exactly: vectors at angle arccos(s)
    table = {}
    for i, s in enumerate(scores):
        table[f"a{i}"] = [1.0, 0.0]
        table[f"b{i}"] = [s, np.sqrt(1 - s * s)]
    assert tasks.bird(context(tmp_path, TableEmbedder(table)))["score"] == 100.0
    assert tasks.bird(context(tmp_path, CONSTANT))["score"] == 0.0
    reversed_table = {**table, **{f"b{i}": table[f"b{3 - i}"] for i in range(4)}}
    assert tasks.bird(context(tmp_path, TableEmbedder(reversed_table)))["score"] < -90


# --- retrieval ---------------------------------------------------------------------------

def _retrieval_dir(tmp_path, task="yago"):
    (tmp_path / task).mkdir(exist_ok=True)
    pairs = [("NYTimes", "The New York Times"), ("NY Post", "New York Post"), ("Big Apple", "New York City"),
             ("NYT", "The New York Times")]
    (tmp_path / task / f"{task}_test_samples.txt").write_text("".join(f"{m}\t{g}\n" for m, g in pairs))
    return pairs


def test_retrieval_known_answer_and_a_wrong_retriever_scores_zero(tmp_path):
    pairs = _retrieval_dir(tmp_path)
    names = list(dict.fromkeys(g for _, g in pairs))
    right = {g: one_hot(i) for i, g in enumerate(names)}
    right.update({m: right[g] for m, g in pairs})
    result = tasks.retrieval(context(tmp_path, TableEmbedder(right)), "yago")
    assert result["score"] == 100.0 and result["dictionary_size"] == 3 and result["dictionary_is_kb"] == 0
    wrong = {g: one_hot(i) for i, g in enumerate(names)}
    wrong.update({m: wrong[names[(names.index(g) + 1) % 3]] for m, g in pairs})
    assert tasks.retrieval(context(tmp_path, TableEmbedder(wrong)), "yago")["score"] == 0.0
    constant = tasks.retrieval(context(tmp_path, CONSTANT), "yago")["score"]
    assert constant == pytest.approx(100 / 3, abs=0.01)  # a three-way tie every time


def test_retrieval_with_a_knowledge_base_file(tmp_path):
    pairs = _retrieval_dir(tmp_path)
    kb = tmp_path / "kb.txt"
    kb.write_text("Times Square\nThe New York Times\nNew York Post\n")
    ctx = context(tmp_path, CONSTANT, kb={"yago": kb, "umls": None})
    result = tasks.retrieval(ctx, "yago")
    assert result["dictionary_size"] == 4 and result["dictionary_is_kb"] == 1  # KB ∪ gold, deduplicated
    with pytest.raises(PearlError, match="bench.yago_kb"):
        tasks.retrieval(context(tmp_path, CONSTANT, kb={"yago": tmp_path / "nope.txt", "umls": None}), "yago")
    assert len(pairs) == result["n"]


def test_wiki_aliases_take_the_names_a_lead_gives_its_subject():
    from pearl.bench.wiki_aliases import load_wiki_aliases, mine_aliases

    articles = [
        ("Timur", "Timur, also known as Tamerlane, was a Turco-Mongol conqueror."),
        ("Taiwan", "Taiwan, officially the Republic of China, formerly known as Formosa or Ilha Formosa, is a country."),
        ("Leviathan (Hobbes book)", "Leviathan, also known as The Leviathan, is a book by Thomas Hobbes."),
        ("Paris", "Paris is the capital of France. It is also called the city of light."),  # no capital: no name
        ("Rome", "Rome is the capital of Italy. " + "It grew. " * 60 + "It is also known as the Eternal City."),
    ]
    assert mine_aliases(articles) == [("Tamerlane", "Timur"), ("Formosa", "Taiwan"), ("Ilha Formosa", "Taiwan")]
    # the real task: every title is the dictionary, every gold title in it
    real = load_wiki_aliases()
    assert len(real.mentions) > 500 and len(real.dictionary) > 9_000 and set(real.gold) <= set(real.dictionary)


def test_geonames_aliases_link_held_out_cities_other_names():
    from pearl.bench.geonames_aliases import alias_pairs, is_held_out, load_cities, load_geonames_aliases

    def city(geonameid, name, *alternates):
        return {"geonameid": geonameid, "name": name, "alternatenames": list(alternates)}

    cities = {"10": city(10, "Mumbai", "Bombay", "mumbai", "MUMBAI", "bmbyy", "Бомбей", "BOM", "Bombaim", "Mumbaî"),
              "11": city(11, "Beijing", "Peking"),  # not held out: training may use it
              "20": city(20, "Köln", "Cologne")}
    pairs = alias_pairs(cities)
    # kept: Latin, capitalised, 4+ characters, not the name after case folding; at most two per city
    assert {alias for alias, name in pairs if name == "Mumbai"} < {"Bombay", "Bombaim", "Mumbaî"}
    assert len([name for _, name in pairs if name == "Mumbai"]) == 2 and ("Cologne", "Köln") in pairs
    assert "Beijing" not in {name for _, name in pairs} and pairs == alias_pairs(dict(reversed(cities.items())))

    real = load_geonames_aliases()
    held_out = {c["name"] for c in load_cities().values() if is_held_out(c["geonameid"])}
    assert ("Lyallpur", "Faisalabad") in zip(real.mentions, real.gold)
    assert len(real.mentions) > 4_000 and set(real.gold) <= set(real.dictionary) == held_out


# --- clustering --------------------------------------------------------------------------

def test_clustering_reads_document_offsets_and_scores_nmi(tmp_path):
    (tmp_path / "conll2003").mkdir()
    docs = [
        {"sentences": [["Japan", "beat", "Syria", "."], ["John", "Smith", "scored", "for", "Fiat", "."]],
         "ner": [[[0, 0, "LOC"], [2, 2, "LOC"]], [[4, 5, "PER"], [8, 8, "ORG"]]]},
        {"sentences": [["Mary", "Jones", "joined", "Sony", "in", "Paris", "and", "the", "EU", "."]],
         "ner": [[[0, 1, "PER"], [3, 3, "ORG"], [5, 5, "LOC"], [8, 8, "MISC"]]]},
    ]
    (tmp_path / "conll2003" / "test.json").write_text("".join(json.dumps(d) + "\n" for d in docs))
    dataset = data.load_clustering(tmp_path, "conll2003")
    assert dataset.phrases == ["Japan", "Syria", "John Smith", "Fiat", "Mary Jones", "Sony", "Paris"]
    assert dataset.labels == [1, 1, 0, 2, 0, 2, 1]  # PER 0, LOC 1, ORG 2; MISC dropped
    by_type = {p: one_hot(10 * label + i % 2) + one_hot(10 * label) * 5 for i, (p, label) in enumerate(zip(dataset.phrases, dataset.labels))}
    assert tasks.clustering(context(tmp_path, TableEmbedder(by_type)), "conll2003")["score"] == 100.0
    with pytest.warns(Warning):  # KMeans finds a single distinct point
        assert tasks.clustering(context(tmp_path, CONSTANT), "conll2003")["score"] == 0.0
    # each phrase takes the vector of a phrase of another type: the clusters mix all types
    swap = {"Japan": "John Smith", "Syria": "Fiat", "John Smith": "Japan", "Fiat": "Mary Jones",
            "Mary Jones": "Sony", "Sony": "Paris", "Paris": "Syria"}
    shuffled = {p: by_type[swap[p]] for p in dataset.phrases}
    assert tasks.clustering(context(tmp_path, TableEmbedder(shuffled)), "conll2003")["score"] < 30
    # the tune suite reads train.json from bench.tune_dir, never the test file
    tune = tmp_path / "tune"
    (tune / "conll2003").mkdir(parents=True)
    (tune / "conll2003" / "train.json").write_text(json.dumps(docs[0]) + "\n")
    result = tasks.TASKS["conll2003_train"](context(tmp_path, TableEmbedder(by_type), tune_dir=tune))
    assert result["n"] == 4 and result["score"] == 100.0


# --- autofj ------------------------------------------------------------------------------

def test_autofj_matches_right_titles_to_left_titles(tmp_path, monkeypatch):
    joins = {
        "A": data.JoinData("A", ["Palmate newt", "Smooth newt", "Toad"], ["Palmate Newt", "Smooth Newt"], ["Palmate newt", "Smooth newt"]),
        "B": data.JoinData("B", ["2012 Badgers season", "2013 Badgers season"], ["2012 Badgers team"], ["2012 Badgers season"]),
    }
    monkeypatch.setattr(data, "autofj_names", lambda: list(joins))
    monkeypatch.setattr(data, "load_autofj", lambda name: joins[name])
    oracle = {}
    for join in joins.values():
        for i, title in enumerate(join.left):
            oracle[title] = one_hot(len(oracle) + 3 * i)
        for query, gold in zip(join.right, join.gold):
            oracle[query] = oracle[gold]
    result = tasks.autofj(context(tmp_path, TableEmbedder(oracle)))
    assert result["score"] == 100.0 and result["datasets"] == 2 and result["n"] == 3
    # constant: A ties 3 ways (1/3), B ties 2 ways (1/2): mean 41.67
    assert tasks.autofj(context(tmp_path, CONSTANT))["score"] == pytest.approx(41.67, abs=0.01)


def test_autofj_data_has_fifty_datasets():
    names = data.autofj_names()
    assert len(names) == 50 and "Amphibian" in names
    join = data.load_autofj("Amphibian")
    assert len(join.right) == len(join.gold) > 0 and set(join.gold) <= set(join.left)


# --- probes: PPDB and ATIS ---------------------------------------------------------------

def test_paraphrase_probe_learns_a_separable_task_and_not_a_constant(tmp_path):
    rng = np.random.default_rng(0)
    rows, table = [], {}
    for i in range(300):
        label = i % 2
        a, b = f"a{i}", f"b{i}"
        center = np.r_[np.ones(4) * (1 if label else -1), np.zeros(4)]
        table[a] = center + rng.normal(0, 0.3, 8)
        table[b] = center + rng.normal(0, 0.3, 8)
        rows.append([a, b, "pos" if label else "neg", None])
    (tmp_path / "ppdb").mkdir()
    (tmp_path / "ppdb" / "ppdb.json").write_text(json.dumps(rows))
    learned = tasks.paraphrase(context(tmp_path, TableEmbedder(table)), filtered=False)
    assert learned["score"] > 95 and learned["seeds"] == 2 and "std" in learned
    constant = tasks.paraphrase(context(tmp_path, TableEmbedder(default=[1.0] * 8)), filtered=False)
    assert constant["score"] < 65
    with pytest.raises(PearlError, match="ppdb_filtered.json is missing: set bench.data_dir"):
        tasks.paraphrase(context(tmp_path, CONSTANT), filtered=True)
    clean = tasks.paraphrase(context(tmp_path, TableEmbedder(table)), filtered=False, clean=True)
    assert clean["score"] > 90 and clean["duplicates_dropped"] == 0 and 0 < clean["test_pairs"] < 60


def test_probe_lr_is_chosen_on_validation_never_on_test():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    train, valid = (x[:200], y[:200]), (x[200:300], y[200:300])
    flipped_test = (x[300:], 1 - y[300:])  # a test-chosen lr would be the one that never learns
    settings = ProbeSettings(lrs=(1e-7, 1e-2), batch_size=32, max_epochs=20, patience=5)
    result = probe_accuracy(train, valid, flipped_test, classes=2, seed=0, settings=settings)
    assert result.lr == 1e-2 and result.accuracy < 0.2


def test_clean_ppdb_dedupes_unordered_pairs_and_keeps_phrases_on_one_side():
    from pearl.bench.ppdb_split import phrase_disjoint_split, unordered_unique

    rng = np.random.default_rng(0)
    left = [f"p{rng.integers(3000)}" for _ in range(30000)]
    right = [f"p{rng.integers(3000)}" for _ in range(30000)]
    labels = [int(min(a, b) < "p2") for a, b in zip(left, right)]  # symmetric: twins agree
    pairs = data.PairData(left + right[:50], right + left[:50], labels + labels[:50])  # 50 twins (b, a)
    pairs = data.PairData(pairs.left + ["x"], pairs.right + ["y"], pairs.labels + [1])
    pairs = data.PairData(pairs.left + ["y"], pairs.right + ["x"], pairs.labels + [0])  # a conflicting twin
    clean = unordered_unique(pairs)
    keys = [frozenset(k) for k in zip(clean.pairs.left, clean.pairs.right)]
    assert len(keys) == len(set(keys)) and frozenset(("x", "y")) not in keys
    assert clean.conflicts == 1 and clean.duplicates >= 51
    parts = phrase_disjoint_split(clean.pairs, (0.7, 0.15, 0.15), seed=3)
    phrases = [{w for i in part for w in (clean.pairs.left[i], clean.pairs.right[i])} for part in parts]
    assert not (phrases[0] & phrases[2]) and not (phrases[0] & phrases[1]) and not (phrases[1] & phrases[2])
    shares = np.array([len(p) for p in parts]) / sum(len(p) for p in parts)
    assert np.allclose(shares, (0.7, 0.15, 0.15), atol=0.05)
    assert [list(p) for p in parts] == [list(p) for p in phrase_disjoint_split(clean.pairs, (0.7, 0.15, 0.15), seed=3)]


def test_ppdb_label_other_than_pos_or_neg_is_an_error(tmp_path):
    (tmp_path / "ppdb").mkdir()
    (tmp_path / "ppdb" / "ppdb.json").write_text(json.dumps([["a", "b", "pos"], ["c", "d", "positive"]]))
    with pytest.raises(PearlError, match="pair 1 has label 'positive'; expected 'pos' or 'neg'"):
        data.load_ppdb(tmp_path, filtered=False)


def test_word_and_sentence_similarity_score_spearman(tmp_path):
    (tmp_path / "word-sim").mkdir()
    (tmp_path / "stsbenchmark").mkdir()
    words = [("cat", "dog", 8.0), ("cat", "car", 2.0), ("cup", "mug", 9.0), ("sun", "tax", 0.5)]
    (tmp_path / "word-sim" / "EN-SIMLEX-999.txt").write_text("".join(f"{a}\t{b}\t{g}\n" for a, b, g in words))
    table = {"cat": [1, 0, 0], "dog": [1, 0.4, 0], "car": [0, 1, 0], "cup": [0, 0, 1], "mug": [0, 0.1, 1],
             "sun": [1, 0, 0], "tax": [-1, 0.01, 0]}
    oracle = tasks.TASKS["simlex"](context(tmp_path, TableEmbedder(table)))
    assert oracle == {"score": 100.0, "n": 4}
    assert tasks.TASKS["simlex"](context(tmp_path, CONSTANT))["score"] == 0.0
    # STS-B: quotes are text, and extra trailing fields (as on 284 test lines) are ignored
    lines = ['main\tf\t2012\t0\t5.0\tA "big" cat.\tA big cat.\textra\tfields',
             "main\tf\t2012\t1\t0.0\tA cup.\tTaxes rise."]
    (tmp_path / "stsbenchmark" / "sts-dev.csv").write_text("\n".join(lines) + "\n")
    pairs = data.load_stsb(tmp_path, "dev")
    assert pairs.left == ['A "big" cat.', "A cup."] and pairs.scores == [5.0, 0.0]
    with pytest.raises(PearlError, match="sts-test.csv is missing: set bench.general_dir"):
        tasks.TASKS["stsb"](context(tmp_path, CONSTANT))
    (tmp_path / "word-sim" / "EN-RW-STANFORD.txt").write_text("a\tb\tnot-a-number\n")
    with pytest.raises(PearlError, match="EN-RW-STANFORD.txt:1: expected 'word1<TAB>word2<TAB>score'"):
        tasks.TASKS["rw"](context(tmp_path, CONSTANT))


def _atis_dir(tmp_path):
    intents = [f"atis_i{k}" for k in range(8)] + ["atis_rare"]
    rng = np.random.default_rng(1)
    table = {}
    for split, n in (("train", 240), ("dev", 80), ("test", 80)):
        folder = tmp_path / "atis" / split
        folder.mkdir(parents=True)
        texts, labels = [], []
        for i in range(n):
            k = i % 8
            words = ["w"] * (3 if i % 16 < 8 else 9)  # half short, half long
            text = " ".join([f"{split}{i}", *words])
            texts.append(text)
            labels.append(intents[k])
            table[text] = one_hot(k, 16) + rng.normal(0, 0.05, 16)
        texts.append("rare query"); labels.append("atis_rare#atis_i0")
        table["rare query"] = one_hot(0, 16)
        (folder / "seq.in").write_text("\n".join(texts) + "\n")
        (folder / "label").write_text("\n".join(labels) + "\n")
    return table


def test_atis_split_by_length_and_probe(tmp_path):
    table = _atis_dir(tmp_path)
    atis = data.load_atis(tmp_path)
    assert len(atis.intents) == 8 and "atis_rare" not in atis.intents
    assert atis.cut == 4  # lower median of 4- and 10-token queries in train
    short, long = atis.splits["test"]
    assert max(len(t.split()) for t in short.texts) <= atis.cut < min(len(t.split()) for t in long.texts)
    result = tasks.intent(context(tmp_path, TableEmbedder(table)), "short")
    assert result["score"] > 95 and result["length_cut_tokens"] == 4
    assert tasks.intent(context(tmp_path, TableEmbedder(default=[1.0] * 16)), "long")["score"] < 30


# --- shared rules ------------------------------------------------------------------------

def test_ties_are_credited_one_over_k():
    assert tie_credit([3], {3}) == 1.0
    assert tie_credit([1, 3], {3}) == 0.5
    assert tie_credit([1, 2], {3}) == 0.0
    assert choice_accuracy([np.array([0.5, 0.5, 0.1]), np.array([0.1, 0.9, 0.9])], [0, 0]) == 0.25


def test_pearson_of_a_constant_prediction_is_zero():
    assert pearson(np.ones(5), np.arange(5.0)) == 0.0
    assert pearson(np.arange(5.0), np.arange(5.0)) == pytest.approx(1.0)


def test_trigram_jaccard():
    jaccard = TrigramJaccard()
    # " night " and " nacht " share only "ht ": 1 of 9 distinct 3-grams
    assert jaccard.rowwise(["night", "abc"], ["nacht", "ABC"]) == pytest.approx([1 / 9, 1.0])
    tied = jaccard.top_ties(["new york times", "zz"], ["New York Times", "new york post", "aa", "bb"])
    assert list(tied[0]) == [0]
    assert list(tied[1]) == [0, 1, 2, 3]  # nothing in common with anything: all tied at 0


def test_string_baseline_runs_only_string_tasks(tmp_path, turney_dir):
    from pearl.bench.run import run_task

    ctx = context(turney_dir, None)
    assert 0 < run_task(ctx, "turney")["score"] <= 100
    with pytest.raises(PearlError, match="string baseline cannot run 'conll2003'"):
        run_task(ctx, "conll2003")
