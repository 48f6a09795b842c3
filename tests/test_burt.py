"""BURT's objectives as options of the train stage: their pairs, their batches, their training, their absence from the export."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from pearl.bench.data import NLI_LABELS
from pearl.errors import PearlError
from pearl.train.burt_pairs import CLASSES, BurtPairs, LabelledPairs, load_burt_pairs, read_ppdb, wordnet_relations
from tests.conftest import ROOT
from tests.test_train import _params, _toy_inputs, _train

SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tSemEval_set"
PREMISES = ["a man plays a guitar", "two dogs run in a park", "a woman cuts an onion", "kids swim in the sea"]


def _burt_dir(folder: Path, leaked: str = "a cat sleeps on a mat") -> Path:
    """SICK with TRAIN, TRIAL and TEST pairs (one TRAIN pair shares a TEST sentence) and SNLI dev and test."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [SICK_HEADER]
    for i, premise in enumerate(PREMISES):
        for j, label in enumerate(("ENTAILMENT", "NEUTRAL", "CONTRADICTION")):
            rows.append(f"{len(rows)}\t{premise}\t{premise} {'now' if j == 0 else 'slowly' if j == 1 else 'never'}"
                        f"\t{label}\t{4.5 - 1.5 * j}\tTRAIN")
    rows.append(f"{len(rows)}\t{leaked}\ta dog barks\tNEUTRAL\t2.0\tTRAIN")
    rows.append(f"{len(rows)}\t{leaked}\ta cat is asleep\tENTAILMENT\t4.6\tTEST")
    rows.append(f"{len(rows)}\ta bird sings\ta bird is singing\tENTAILMENT\t4.8\tTRIAL")
    (folder / "SICK.txt").write_text("\r\n".join(rows) + "\r\n")
    for split, premise, other in (("dev", "a boy reads a book", "a child reads"), ("test", "a girl rides a horse", "a girl is out")):
        (folder / f"snli_s1.{split}").write_text(f"{premise} . \n{premise} . \n")
        (folder / f"snli_s2.{split}").write_text(f"{other} . \n{premise} outdoors . \n")
        (folder / f"snli_labels.{split}").write_text("entailment\nneutral\n")
    return folder


def _ppdb(path: Path) -> Path:
    lines = [("[NN]", "big car", "large automobile", "Equivalence"), ("[NN]", "car", "vehicle", "ForwardEntailment"),
             ("[NN]", "vehicle", "truck", "ReverseEntailment"), ("[NN]", "hundreds", "thousands", "Independent"),
             ("[JJ]", "hot", "cold", "Exclusion"), ("[NN]", "bank", "river", "OtherRelated")]
    path.write_text("".join(f"{lhs} ||| {a} ||| {b} ||| PPDB2.0Score=3.1 ||| 0-0 ||| {rel}\n" for lhs, a, b, rel in lines))
    return path


def test_the_ppdb_reader_keeps_burts_three_relations_and_names_a_bad_line(tmp_path):
    pairs = read_ppdb(_ppdb(tmp_path / "ppdb.txt"))
    assert list(zip(pairs.left, pairs.right, pairs.labels.tolist())) == [
        ("big car", "large automobile", 0), ("car", "vehicle", 1), ("vehicle", "truck", 1), ("hundreds", "thousands", 2)]
    (tmp_path / "bad.txt").write_text("[NN] ||| car ||| auto\n")
    with pytest.raises(PearlError, match=r"bad.txt:1: expected 'LHS \|\|\| phrase"):
        read_ppdb(tmp_path / "bad.txt")


def test_training_pairs_hold_no_test_or_tune_text_and_count_what_they_drop(make_params, tmp_path):
    burt_dir = _burt_dir(tmp_path / "burt")
    toy = _toy_inputs(tmp_path)
    params = make_params(burt__nli_weight=1.0, burt__pi_weight=1.0, burt__ptc_weight=1.0,
                         burt__ppdb_file=str(_ppdb(tmp_path / "ppdb.txt")))
    phrases = pl.read_parquet(toy["variants"])
    blocked = {phrases["variant"][0].casefold(), "large automobile"}  # folded evaluation texts, as typing writes them
    pairs, record = load_burt_pairs(params.burt, burt_dir, toy["variants"], tmp_path, blocked, seed=0)
    # SICK TRAIN's pair with a TEST sentence, and PPDB's pair with an evaluation text, are dropped
    assert record["nli"]["pairs"] == 12 + 2 and record["nli"]["dropped_test_or_tune"] == 1
    assert record["nli"]["per_label"] == [4 + 1, 4 + 1, 4]
    assert record["ptc"]["dropped_test_or_tune"] == 1 and record["ptc"]["per_label"] == [0, 2, 1]
    assert record["pi"]["dropped_test_or_tune"] == 1 and record["pi"]["source"].startswith("PPDB file")
    every = {t for task in pairs.pairs.values() for t in task.left + task.right}
    assert "a cat sleeps on a mat" not in every and "large automobile" not in every
    assert "a girl rides a horse ." not in every and "a bird sings" not in every  # SNLI test, SICK TRIAL

    ours = make_params(burt__pi_weight=1.0)  # without a PPDB file, PI pairs our cached variants with their phrases
    pairs, record = load_burt_pairs(ours.burt, burt_dir, toy["variants"], tmp_path, set(), seed=0)
    assert record["pi"]["pairs"] == phrases.height and set(pairs.pairs["pi"].right) == set(phrases["variant"])


def test_a_steps_pairs_are_a_function_of_seed_and_step_with_the_sentence_task_every_second_batch():
    def labelled(n, classes, task):
        return LabelledPairs([f"{task} left {i}" for i in range(n)], [f"{task} right {i}" for i in range(n)],
                             np.arange(n) % classes, task)

    pairs = BurtPairs({task: labelled(40, CLASSES[task], task) for task in ("nli", "pi", "ptc")}, 16, pi_negatives=3)
    assert [pairs.task_at(s) for s in range(8)] == ["nli", "pi", "nli", "ptc", "nli", "pi", "nli", "ptc"]
    assert BurtPairs({"pi": labelled(4, 2, "pi"), "ptc": labelled(4, 3, "ptc")}, 4, 1).task_at(3) == "ptc"
    first, again = pairs.batch(7, 1), pairs.batch(7, 1)
    assert first.left == again.left and first.right == again.right and np.array_equal(first.labels, again.labels)
    assert pairs.batch(8, 1).left != first.left
    # PI: a draw is a positive (its own right side) one time in k + 1, else a random partner labelled 0
    drawn = [pairs.batch(0, s) for s in range(1, 400, 4)]
    labels = np.concatenate([b.labels for b in drawn])
    assert 0.18 < labels.mean() < 0.32
    for batch in drawn:
        for left, right, y in zip(batch.left, batch.right, batch.labels):
            assert (right == left.replace("left", "right")) == bool(y)


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["nli", "pi", "ptc"])
def test_each_objective_alone_trains_its_loss_down_and_leaves_no_head_in_the_model_or_export(
        objective, make_params, tiny_encoder, tmp_path):
    from pearl.train.stage import run_average

    toy = _toy_inputs(tmp_path)
    burt_dir = _burt_dir(tmp_path / "burt")
    ppdb = _ppdb(tmp_path / "ppdb.txt")
    # PEARL's own losses off: the steps train the objective alone, on a handful of pairs it can learn
    params = _params(make_params, tiny_encoder, tmp_path, train__contrastive_weight=0, train__type_weight=0,
                     train__distill_weight=0, train__epochs=100, train__max_steps=80, train__lr=1e-3, train__head_lr=3e-2,
                     train__log_every=5, bench__burt_dir=str(burt_dir), burt__ppdb_file=str(ppdb),
                     burt__batch_size=8, burt__max_length=16, **{f"burt__{objective}_weight": 1.0})
    numbers, log = _train(params, toy, tmp_path / "run")
    burt = numbers["burt"][objective]
    assert list(numbers["burt"]) == [objective] and log[objective].null_count() == 0
    assert (burt["loss_first_tenth"], burt["loss_last_tenth"]) == (round(log[objective][0], 4), round(log[objective][-1], 4))
    losses = log[objective].to_numpy()
    assert losses[-4:].mean() < 0.7 * losses[:4].mean(), log.select("step", objective)
    assert log["contrastive"].sum() == 0 and log["type_loss"].sum() == 0  # no phrase batch was encoded
    if objective == "nli":  # the same seed trains the same steps (the exponential schedule does not follow the length)
        _, again = _train(dataclasses.replace(params, train=dataclasses.replace(params.train, max_steps=10)), toy,
                          tmp_path / "again")
        assert again[objective].equals(log[objective].head(2))

    dim = 32 + 8
    run_average(params, tmp_path / "run" / "model", tmp_path / "export", tmp_path / "average.json", toy["typed"])
    shapes = []
    for folder in (tmp_path / "run" / "model", tmp_path / "export"):
        for file in folder.rglob("*"):
            if file.suffix == ".safetensors":
                from safetensors.torch import load_file
                shapes += [tuple(t.shape) for t in load_file(file).values()]
            elif file.suffix == ".pt":
                heads = torch.load(file, weights_only=True)
                assert set(heads) == {"type_head", "char"}
                shapes += [tuple(t.shape) for part in heads.values() for t in part.values()]
    assert shapes and not [s for s in shapes if s and s[-1] == 3 * dim]  # no classifier over (u, v, |u - v|)
    # nor the type head, which the type loss never trained: `pearl types` refuses the export instead of guessing
    from pearl.errors import MissingModelError
    from pearl.types.predict import predict_types

    assert not (tmp_path / "export" / "pearl_type_head.safetensors").exists()
    assert json.loads((tmp_path / "average.json").read_text())["type_head"] == "none: train.type_weight was 0"
    with pytest.raises(MissingModelError, match="no type head"):
        predict_types(tmp_path / "export", ["new york"])


def test_nli_from_the_hub_reads_a_datasets_train_split_and_drops_pairs_without_a_gold_label(tmp_path):
    from pearl.train.burt_pairs import _hub_nli

    folder = tmp_path / "snli"
    folder.mkdir()
    rows = [{"premise": "a man sleeps", "hypothesis": "a man rests", "label": 0},
            {"premise": "a man sleeps", "hypothesis": "a man runs", "label": 2},
            {"premise": "a man sleeps", "hypothesis": "a man dreams", "label": -1}]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    left, right, labels = _hub_nli(str(folder))
    assert right == ["a man rests", "a man runs"] and [NLI_LABELS[y] for y in labels] == ["entailment", "contradiction"]
    (folder / "train.jsonl").write_text(json.dumps({"text": "no pair here"}) + "\n")
    with pytest.raises(PearlError, match=r"^burt.nli_hub: .* could not be loaded .*burt.nli_source=offline"):
        _hub_nli(str(folder))


class _Lemma:
    def __init__(self, text):
        self.text = text

    def name(self):
        return self.text


class _Synset:
    """A WordNet synset as nltk's reader gives it, its hyponyms in whatever order `order` says (nltk keeps
    pointers in sets, whose order follows Python's string hashing)."""

    def __init__(self, name, lemmas, order=1):
        self._name, self._lemmas, self.order, self.hypo, self.hyper = name, [_Lemma(t) for t in lemmas], order, [], []

    def name(self):
        return self._name

    def lemmas(self):
        return self._lemmas

    def hypernyms(self):
        return self.hyper[::self.order]

    def hyponyms(self):
        return self.hypo[::self.order]


def _toy_wordnet(order):
    animal = _Synset("animal.n.01", ["animal", "beast"], order)
    kinds = [_Synset(f"{n}.n.01", [n], order) for n in ("dog", "cat", "cow", "owl")]
    animal.hypo = kinds
    for kind in kinds:
        kind.hyper = [animal]
    car = _Synset("car.n.01", ["car", "auto", "automobile"], order)

    class WordNet:
        def all_synsets(self):
            return iter([animal, *kinds, car])

    return WordNet()


def test_wordnet_relations_do_not_follow_the_order_of_nltks_pointer_sets():
    relations = wordnet_relations(_toy_wordnet(1))
    assert relations == wordnet_relations(_toy_wordnet(-1))
    assert relations[0] == [("animal", "beast"), ("car", "auto"), ("car", "automobile"), ("auto", "automobile")]
    assert ("dog", "animal") in relations[1] and relations[2] == [("cat", "cow"), ("cow", "dog"), ("dog", "owl")]


@pytest.mark.slow
def test_wordnet_gives_each_ptc_class_its_relation():
    from pearl.augment.token_level import load_wordnet

    relations = wordnet_relations(load_wordnet(ROOT / "nltk_data"))
    equivalence, entailment, independent = (set(relations[y]) for y in range(3))
    assert ("car", "auto") in equivalence and ("dog", "canine") in entailment
    assert all(a != b for a, b in relations[0]) and len(independent) > 10_000
    assert not equivalence & entailment


def test_bad_burt_params_fail_in_one_line_before_training(make_params, tmp_path):
    with pytest.raises(PearlError, match="burt.features .* names a feature twice"):
        make_params(burt__features=["u", "u"])
    with pytest.raises(PearlError, match="burt.features"):
        make_params(burt__features=["u", "cosine"])
    alone = make_params(train__contrastive_weight=0, train__type_weight=0, train__distill_weight=0, burt__nli_weight=1)
    assert alone.burt.weights == {"nli": 1.0}
    with pytest.raises(PearlError, match="leave no loss to train on"):
        make_params(train__contrastive_weight=0, train__type_weight=0, train__distill_weight=0)
    from pearl.train.inputs import check_burt_sources

    with pytest.raises(PearlError, match=r"SICK.txt is missing: set bench.burt_dir"):
        check_burt_sources(make_params(burt__nli_weight=1, bench__burt_dir=str(tmp_path)))
    with pytest.raises(PearlError, match=r"nothing.txt is missing: set burt.ppdb_file"):
        check_burt_sources(make_params(burt__ptc_weight=1, burt__ppdb_file=str(tmp_path / "nothing.txt")))
