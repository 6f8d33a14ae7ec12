import pytest

from stages.core.config import ConfigError, GlobalParams, load_global, load_section
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
