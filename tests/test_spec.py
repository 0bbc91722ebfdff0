from __future__ import annotations

import pytest

from relcol.errors import SpecError
from relcol.study import load_study, parse_study
from tests.conftest import TINY

GOOD = """
name = "s"
severities = [0.0, 0.1]
[[datasets]]
name = "wine"
[[models]]
name = "naive_bayes"
[[corruptions]]
name = "mcar"
"""


def test_the_builtin_default_study_is_valid_and_covers_every_operator_and_six_models():
    study = load_study()
    assert study.name == "default"
    assert {c.name for c in study.corruptions} == {
        "mcar",
        "mar",
        "mnar",
        "ampute",
        "gaussian_noise",
        "label_noise",
        "structural_bias",
    }
    assert {m.name for m in study.models} >= {
        "logistic_regression",
        "random_forest",
        "hist_gradient_boosting",
        "lightgbm",
        "mlp",
        "naive_bayes",
    }
    assert all(c.severities[0] == 0.0 for c in study.corruptions)


def test_a_good_spec_parses_with_defaults_and_keeps_its_text():
    study = parse_study(GOOD)
    assert (study.seeds, study.repeats, study.test_size, study.split_seed) == ((0,), 1, 0.3, 0)
    assert study.corruptions[0].severities == (0.0, 0.1)
    assert study.text == GOOD and len(study.spec_hash) == 64


def test_params_ids_and_per_corruption_severities():
    study = load_study(TINY)
    lgbm = next(m for m in study.models if m.name == "lightgbm")
    assert dict(lgbm.params) == {"n_estimators": 20}
    noise = next(c for c in study.corruptions if c.name == "gaussian_noise")
    assert noise.severities == (0.0, 0.5, 1.0)
    two = parse_study(GOOD + '[[corruptions]]\nname = "mcar"\nid = "mcar_b"\n')
    assert [c.id for c in two.corruptions] == ["mcar", "mcar_b"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace('name = "mcar"', 'name = "blur"'),
            r"corruptions\[0\]: unknown corruption 'blur'; known operators: .*mnar",
        ),
        (
            lambda t: t.replace('name = "naive_bayes"', 'name = "svm"'),
            r"models\[0\]: unknown model 'svm'",
        ),
        (
            lambda t: t.replace("[0.0, 0.1]", "[0.0, 0.3, 0.2]"),
            "severities must be strictly increasing",
        ),
        (lambda t: t.replace("[0.0, 0.1]", "[0.1, 0.2]"), "must start at 0.0"),
        (lambda t: t.replace("[0.0, 0.1]", "[]"), "non-empty list"),
        (
            lambda t: t.replace("[0.0, 0.1]", "[0.0, 1.5]"),
            r"mcar: severity must be a finite number in \[0(\.0)?, 1(\.0)?\]\. Got 1\.5",
        ),
        (
            lambda t: t.replace('[[models]]\nname = "naive_bayes"\n', ""),
            r"the grid is empty: give at least one \[\[models\]\]",
        ),
        (lambda t: "seedz = [1]\n" + t, r"unknown key\(s\) \['seedz'\]"),
        (lambda t: t.replace('name = "s"', 'name = "../up"'), "study name must be"),
        (lambda t: t.replace('name = "s"', 'name = "a/b"'), "study name must be"),
        (
            lambda t: t.replace('name = "s"', 'name = "s"\nseeds = 3'),
            "seeds must be a non-empty list",
        ),
        (
            lambda t: t.replace('name = "s"', 'name = "s"\nrepeats = 0'),
            r"repeats must be an int in \[1, 10000\]",
        ),
        (
            lambda t: t.replace('name = "s"', 'name = "s"\ntest_size = 1.2'),
            r"test_size must be a number in \(0, 1\)",
        ),
        (lambda t: t + '[[models]]\nname = "naive_bayes"\n', "model 'naive_bayes' appears twice"),
        (lambda t: t.replace("severities", "severities = ", 1), "not valid TOML"),
        (
            lambda t: t.replace('name = "wine"', 'name = "wine"\nsize = 3'),
            r"unknown parameter\(s\) \['size'\] for dataset 'wine'",
        ),
        (lambda t: t.replace('name = "wine"', 'name = "mine"'), "unknown dataset 'mine'"),
    ],
)
def test_broken_specs_get_one_clear_error(edit, message):
    with pytest.raises(SpecError, match=message):
        parse_study(edit(GOOD), source="spec.toml")


def test_missing_file_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match="cannot read study spec"):
        load_study(tmp_path / "absent.toml")


def test_an_unknown_structural_bias_base_is_caught_with_the_severities():
    text = GOOD.replace('name = "mcar"', 'name = "structural_bias"\nbase = "blur"')
    with pytest.raises(
        SpecError,
        match=r"corruptions\[0\]: structural_bias: base must be one of .*'mnar'.*Got 'blur'",
    ):
        parse_study(text)
