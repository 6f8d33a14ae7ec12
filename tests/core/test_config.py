import re
from pathlib import Path

import pytest

from stages.core.config import ConfigError, GlobalParams, Section, load_global, load_section, read_params
from stages.core.trainer import TrainerConfig
from stages.matrix_denoising.config import DataConfig, TrainConfig
from tests.conftest import write_layout, write_params


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
    """A smoke params copy with ``edit(params)`` applied to the merged mapping."""
    path = write_params(tmp_path)
    params = read_params(path)
    edit(params)
    return write_layout(path, params)


def test_infinite_float_is_refused_under_the_base_key(tmp_path):
    path = write_params(tmp_path, **{"matrix_denoising.train.horizon": float("inf")})
    assert "horizon: .inf" in (tmp_path / "params" / "matrix_denoising.yaml").read_text()
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
    return write_layout(tmp_path / "toy_params.yaml", {"seed": 0, "profile": "smoke", "threads": 1,
                                                        "papers": ["toy"], "toy": {"train": section}})


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

    path = write_layout(tmp_path / "params.yaml", {"seed": 1, "profile": "smoke", "threads": 1, "papers": ["a"],
                                                   "a": {"nested": {"x": [1, 2]}}})
    config._parsed.clear()
    first = config.read_params(path)
    first["a"]["nested"]["x"].append(3)  # a caller's change must not leak into the next read
    assert config.read_params(path)["a"]["nested"]["x"] == [1, 2]
    assert config._parsed[str((tmp_path / "params" / "a.yaml").resolve())][1]["nested"]["x"] == [1, 2]
    assert len(config._parsed) == 3  # params.yaml, params/assets.yaml, params/a.yaml: each parsed once
    path.write_text("seed: 2\nprofile: smoke\nthreads: 1\npapers: [a]\n")  # same size class, new text
    assert config.read_params(path)["seed"] == 2
    assert len(config._parsed) == 3  # a file's old parse is replaced, not kept beside the new one


def test_the_fast_yaml_loader_reads_the_committed_params_as_the_pure_python_one_does():
    import yaml

    from stages.core import config

    root = Path(__file__).resolve().parents[2]
    for path in [root / "params.yaml", *sorted((root / "params").glob("*.yaml"))]:
        text = path.read_text()
        assert yaml.load(text, Loader=config._LOADER) == yaml.safe_load(text), path


# ---- the split layout: params.yaml (global switches) + params/<paper>.yaml

def test_the_merged_mapping_holds_the_globals_and_each_section_file_under_its_name():
    import yaml

    root = Path(__file__).resolve().parents[2]
    data = read_params(root / "params.yaml")
    glob = load_global(root / "params.yaml")
    assert list(data) == ["seed", "profile", "threads", "papers", "assets", *glob.papers]
    for name in ["assets", *glob.papers]:
        assert data[name] == yaml.safe_load((root / "params" / f"{name}.yaml").read_text()), name
    assert sorted(p.stem for p in (root / "params").glob("*.yaml")) == sorted(["assets", *glob.papers])
    assert set(yaml.safe_load((root / "params.yaml").read_text())) == {"seed", "profile", "threads", "papers"}


def test_a_dotted_section_reads_the_papers_file(tmp_path):
    path = write_params(tmp_path, "default", **{"matrix_denoising.train.step_size": 0.005})
    assert "step_size: 0.005" in (tmp_path / "params" / "matrix_denoising.yaml").read_text()
    assert "matrix_denoising" not in (tmp_path / "params.yaml").read_text().split("papers:")[0]
    assert load_section(TrainConfig, "matrix_denoising.train", path).step_size == 0.005


def test_a_listed_paper_without_its_file_is_refused_naming_the_file(tmp_path):
    path = write_params(tmp_path)
    (tmp_path / "params" / "espo.yaml").unlink()
    with pytest.raises(ConfigError, match=re.escape(f"{tmp_path / 'params' / 'espo.yaml'} is missing") +
                       r".*paper 'espo'"):
        load_section(DataConfig, "matrix_denoising.data", path)


def test_a_section_left_in_params_yaml_is_refused_naming_both_files(tmp_path):
    import yaml

    path = write_params(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["espo"] = yaml.safe_load((tmp_path / "params" / "espo.yaml").read_text())
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        load_section(DataConfig, "matrix_denoising.data", path)
    assert str(path) in str(info.value) and str(tmp_path / "params" / "espo.yaml") in str(info.value)


def test_a_params_file_of_no_listed_paper_is_refused_naming_it(tmp_path):
    path = write_params(tmp_path)
    (tmp_path / "params" / "espoo.yaml").write_text("train: {}\n")
    with pytest.raises(ConfigError, match=re.escape(str(tmp_path / "params" / "espoo.yaml")) + ".*no paper 'espoo'"):
        load_section(DataConfig, "matrix_denoising.data", path)


def test_a_missing_section_is_blamed_on_the_papers_file(tmp_path):
    path = write_params(tmp_path)
    with pytest.raises(ConfigError, match=re.escape("missing section 'matrix_denoising.trian' (no key 'trian' in "
                                                    f"{tmp_path / 'params' / 'matrix_denoising.yaml'})")):
        load_section(TrainConfig, "matrix_denoising.trian", path)


def test_an_error_is_blamed_on_the_file_of_its_key(tmp_path):
    from stages.core.config import file_of_error

    path = write_params(tmp_path)
    assert file_of_error("espo.train.lr: Input should be greater than 0", path) == tmp_path / "params" / "espo.yaml"
    assert file_of_error("params.threads: Input should be a valid integer", path) == path
    assert file_of_error(f"params file not found: {path}", path) == path
    assert file_of_error("nopaper.train: unknown key", path) == path
