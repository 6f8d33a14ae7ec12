import re
from pathlib import Path

import pytest

from stages.core.config import ConfigError, GlobalParams, Section, load_global, load_section
from stages.core.trainer import TrainerConfig
from stages.matrix_denoising.config import DataConfig, TrainConfig
from tests.conftest import write_params


def test_profile_overrides_are_applied(tmp_path):
    smoke = load_section(DataConfig, "matrix_denoising.data", write_params(tmp_path, "smoke"))
    default = load_section(DataConfig, "matrix_denoising.data", write_params(tmp_path, "default"))
    assert smoke.p < default.p
    assert default.p == 900 and default.n == 1200
    assert smoke.initial_overlaps == default.initial_overlaps  # not overridden, inherited


def test_unknown_key_is_refused_with_dotted_path(tmp_path):
    path = write_params(tmp_path, **{"matrix_denoising.train.stepsize": 0.1})
    with pytest.raises(ConfigError, match=r"matrix_denoising\.train\.stepsize: unknown key"):
        load_section(TrainConfig, "matrix_denoising.train", path)


def test_wrong_type_is_refused(tmp_path):
    path = write_params(tmp_path, **{"matrix_denoising.data.p": "nine hundred"})
    with pytest.raises(ConfigError, match=r"matrix_denoising\.data\.p"):
        load_section(DataConfig, "matrix_denoising.data", path)


def test_impossible_value_is_refused(tmp_path):
    path = write_params(tmp_path, **{"matrix_denoising.train.step_size": -0.01})
    with pytest.raises(ConfigError, match=r"matrix_denoising\.train\.step_size"):
        load_section(TrainConfig, "matrix_denoising.train", path)


def test_bad_value_in_another_profile_is_refused_too(tmp_path):
    # running `default` must still refuse a broken `paper` profile, naming it
    path = write_params(tmp_path, "default", **{"matrix_denoising.train.profiles.paper.step_size": 0})
    with pytest.raises(ConfigError, match=r"matrix_denoising\.train\.profiles\.paper\.step_size"):
        load_section(TrainConfig, "matrix_denoising.train", path)


def test_unknown_profile_name_is_refused(tmp_path):
    path = write_params(tmp_path, **{"matrix_denoising.train.profiles.huge": {"horizon": 1.0}})
    with pytest.raises(ConfigError, match="unknown profile"):
        load_section(TrainConfig, "matrix_denoising.train", path)


def test_global_profile_must_be_known(tmp_path):
    with pytest.raises(ConfigError, match=r"params\.profile"):
        load_global(write_params(tmp_path, profile="tiny"))


def test_global_params_of_the_repository_are_valid():
    glob = load_global()
    assert isinstance(glob, GlobalParams) and glob.profile == "default"


# ---- values past validation: non-finite floats, booleans as numbers, the key blamed

def _edited(tmp_path, edit):
    """A smoke params copy with ``edit(params)`` applied to the parsed YAML."""
    import yaml

    path = write_params(tmp_path)
    params = yaml.safe_load(path.read_text())
    edit(params)
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def test_infinite_float_is_refused_under_the_base_key(tmp_path):
    path = write_params(tmp_path, **{"matrix_denoising.train.horizon": float("inf")})
    assert "horizon: .inf" in path.read_text()
    with pytest.raises(ConfigError, match=r"^matrix_denoising\.train\.horizon: Input should be a finite number"):
        load_section(TrainConfig, "matrix_denoising.train", path)


def test_nan_verdict_threshold_is_refused(tmp_path):
    from stages.core.verdict import VerdictRule

    def edit(p):
        p["matrix_denoising"]["verdict"]["checks"][0]["threshold"] = float("nan")

    with pytest.raises(ConfigError, match=r"^matrix_denoising\.verdict\.checks\.0\.threshold: .*finite"):
        load_section(VerdictRule, "matrix_denoising.verdict", _edited(tmp_path, edit))


@pytest.mark.parametrize(("dotted", "value"), [
    ("matrix_denoising.data.n_seeds", True),     # a boolean is not a count
    ("matrix_denoising.data.n_seeds", 3.0),      # nor is a float
    ("matrix_denoising.data.n_seeds", "3"),      # nor a string
])
def test_an_int_field_takes_only_ints(tmp_path, dotted, value):
    with pytest.raises(ConfigError, match=r"^matrix_denoising\.data\.n_seeds: Input should be a valid integer"):
        load_section(DataConfig, "matrix_denoising.data", write_params(tmp_path, **{dotted: value}))


def test_a_float_field_takes_an_int_but_not_a_boolean(tmp_path):
    cfg = load_section(TrainConfig, "matrix_denoising.train",
                       write_params(tmp_path, "default", **{"matrix_denoising.train.horizon": 60}))
    assert cfg.horizon == 60.0 and isinstance(cfg.horizon, float)
    with pytest.raises(ConfigError, match=r"matrix_denoising\.train\.horizon: .*not a boolean"):
        load_section(TrainConfig, "matrix_denoising.train",
                     write_params(tmp_path, **{"matrix_denoising.train.horizon": True}))


def test_boolean_threads_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"params\.threads: Input should be a valid integer"):
        load_global(write_params(tmp_path, threads=True))


def _toy(tmp_path, section):
    import yaml

    path = tmp_path / "toy_params.yaml"
    path.write_text(yaml.safe_dump({"seed": 0, "profile": "smoke", "threads": 1, "papers": ["toy"],
                                    "toy": {"train": section}}))
    return path


class _Train(Section):
    trainer: TrainerConfig


def test_a_bad_base_value_is_blamed_on_the_base_key_even_when_its_parent_is_overridden(tmp_path):
    # smoke overrides trainer.log_every_n_steps only: trainer.max_steps = 0 is the base's mistake
    path = _toy(tmp_path, {"trainer": {"max_steps": 0},
                           "profiles": {"smoke": {"trainer": {"log_every_n_steps": 2}}}})
    with pytest.raises(ConfigError, match=r"^toy\.train\.trainer\.max_steps: Input should be greater"):
        load_section(_Train, "toy.train", path)


def test_a_bad_override_is_blamed_on_the_profile(tmp_path):
    path = _toy(tmp_path, {"trainer": {"max_steps": 5},
                           "profiles": {"paper": {"trainer": {"max_steps": -1, "log_every_n_steps": 2}}}})
    with pytest.raises(ConfigError, match=r"^toy\.train\.profiles\.paper\.trainer\.max_steps: Input should be"):
        load_section(_Train, "toy.train", path)


def test_a_params_file_that_is_not_yaml_is_refused_naming_it(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 0\nprofile: [smoke\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: not valid YAML: ") + ".*line 3") as info:
        load_global(path)
    assert "\n" not in str(info.value)


def test_params_read_again_are_parsed_once_yet_follow_edits_and_are_never_shared(tmp_path):
    from stages.core import config

    path = tmp_path / "params.yaml"
    path.write_text("seed: 1\nprofile: smoke\nthreads: 1\npapers: [a]\nnested: {x: [1, 2]}\n")
    first = config.read_params(path)
    first["nested"]["x"].append(3)  # a caller's change must not leak into the next read
    assert config.read_params(path)["nested"]["x"] == [1, 2]
    assert next(iter(config._parsed.values()))["nested"]["x"] == [1, 2]
    path.write_text("seed: 2\nprofile: smoke\nthreads: 1\npapers: [a]\n")  # same size class, new text
    assert config.read_params(path)["seed"] == 2
    assert len(config._parsed) == 1  # only the last parse is kept


def test_the_fast_yaml_loader_reads_the_committed_params_as_the_pure_python_one_does():
    import yaml

    from stages.core import config

    text = (Path(__file__).resolve().parents[2] / "params.yaml").read_text()
    assert yaml.load(text, Loader=config._LOADER) == yaml.safe_load(text)
