"""The join configurations chosen without labels (pearl.joining.select): AutoFJ's precision estimate."""

import numpy as np

from pearl.joining.select import choose, join_functions

LEFT = ["apple inc", "microsoft corporation", "google llc", "amazon com inc", "john smith", "john smyth", "mary jones"]
RIGHT = ["Apple Inc.", "Microsoft Corp", "Google", "jon smith", "Mary Jones"]


def test_a_join_near_two_left_names_counts_half_a_true_positive():
    choice = choose(LEFT, RIGHT, None, precision_target=0.9)
    assert choice.reached_target and all(f in join_functions(False) for f, _ in choice.configurations)
    assert [LEFT[row] for row in choice.left_row] == ["apple inc", "microsoft corporation", "google llc",
                                                       "john smith", "mary jones"]
    # four clear joins and "jon smith", as near "john smyth" as its match: 4 + 1/2 over five joined rows
    assert choice.confidence.tolist() == [1, 1, 1, 0.5, 1]
    assert choice.estimated_true_positives == 4.5 and np.isclose(choice.estimated_precision, 0.9)


def test_a_higher_target_joins_fewer_names():
    strict = choose(LEFT, RIGHT, None, precision_target=0.95)
    assert strict.reached_target and strict.estimated_precision >= 0.95
    joined = [RIGHT[i] for i in np.flatnonzero(strict.left_row >= 0)]
    assert "jon smith" not in joined and len(joined) == strict.estimated_true_positives == 3
    assert (strict.confidence[strict.left_row < 0] == 0).all()


def test_no_configuration_at_the_target_joins_nothing():
    twins = ["john smith", "john smyth", "jon smith", "johnny smith"]  # every left name is near another
    choice = choose(twins, ["jonn smith", "zzz"], None, precision_target=1.0)
    assert not choice.reached_target and choice.configurations == [] and choice.estimated_precision == 0.5
    assert (choice.left_row == -1).all() and (choice.confidence == 0).all()


def test_a_name_that_shares_nothing_is_never_joined():
    choice = choose(["acme"], ["acme", "ACME corp", "x"], None, precision_target=0.9)
    assert choice.left_row.tolist() == [0, 0, -1]


def test_the_encoder_cosine_joins_the_choice(tiny_text_encoder):
    functions = join_functions(True)
    assert "cosine" in functions and all(np.isclose(sum(w.values()), 1.0) for w in functions.values())
    choice = choose(LEFT, RIGHT, tiny_text_encoder, precision_target=0.9)
    assert all(f in functions for f, _ in choice.configurations) and len(choice.left_row) == len(RIGHT)
