from __future__ import annotations

from pathlib import Path

import pytest

from textgate.config import Config, RepositoryConfig, TritonConfig
from textgate.errors import ConfigError


def test_defaults_are_valid() -> None:
    cfg = Config()
    assert cfg.repository.bucket_lengths == (16, 32, 64, 128, 256)
    assert cfg.triton.http_port == 8000


def test_from_dict_nested_and_env_override() -> None:
    cfg = Config.from_dict(
        {"repository": {"dynamic_batching": {"preferred_batch_sizes": [4, 8]}}},
        env={
            "TEXTGATE_TRITON__HTTP_PORT": "0",
            "TEXTGATE_REPOSITORY__BUCKET_LENGTHS": "32,64",
            "TEXTGATE_REPOSITORY__INSTANCE_GROUP__COUNT": "2",
            "TEXTGATE_TRITON__LOG_FILE": "/tmp/x.log",
            "TEXTGATE_TRITONSERVER": "/ignored/not/a/section",
        },
    )
    assert cfg.triton.http_port == 0
    assert cfg.triton.log_file == Path("/tmp/x.log")
    assert cfg.repository.bucket_lengths == (32, 64)
    assert cfg.repository.instance_group.count == 2
    assert cfg.repository.dynamic_batching.preferred_batch_sizes == (4, 8)


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"triton": {"http_port": 70000}}, "triton.http_port"),
        ({"triton": {"nope": 1}}, "triton.nope"),
        ({"nope": {}}, "nope"),
        ({"repository": {"bucket_lengths": [64, 32]}}, "repository.bucket_lengths"),
        ({"repository": {"instance_group": {"count": -1}}}, "repository.instance_group.count"),
        ({"repository": {"instance_group": {"kind": "tpu"}}}, "repository.instance_group.kind"),
        ({"repository": {"max_batch_size": "many"}}, "repository.max_batch_size"),
        ({"repository": {"variant": "int4"}}, "repository.variant"),
        (
            {"repository": {"target": "triton-container", "shape_strategy": "fused"}},
            "repository.shape_strategy",
        ),
        (
            {"repository": {"dynamic_batching": {"preferred_batch_sizes": [128]}}},
            "repository.dynamic_batching.preferred_batch_sizes",
        ),
        (
            {"repository": {"version_policy": {"policy": "specific"}}},
            "repository.version_policy.versions",
        ),
        ({"triton": {"startup_timeout_s": True}}, "triton.startup_timeout_s"),
        # the release hook: an absolute program (no PATH lookup) given the queue id
        (
            {"review": {"release_command": ["postsuper", "-H", "{queue_id}"]}},
            "review.release_command",
        ),
        (
            {"review": {"release_command": ["/usr/sbin/postsuper", "-H", "ALL"]}},
            "review.release_command",
        ),
        ({"review": {"release_timeout_s": 0}}, "review.release_timeout_s"),
    ],
)
def test_errors_name_the_dotted_key(data: dict, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_dict(data)
    assert info.value.key == key
    assert f"'{key}'" in str(info.value)


def test_env_error_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_dict(None, env={"TEXTGATE_TRITON__GRPC_PORT": "abc"})
    assert info.value.key == "triton.grpc_port"


def test_from_file_and_example_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("repository:\n  max_batch_size: 8\n", encoding="utf-8")
    assert Config.from_file(path).repository.max_batch_size == 8
    example = Path(__file__).resolve().parents[3] / "deploy" / "textgate.example.yaml"
    assert Config.from_file(example) == Config()  # the example documents the defaults


def test_bad_yaml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        Config.from_file(path)


def test_sections_are_frozen_and_keyword_only() -> None:
    with pytest.raises(TypeError):
        TritonConfig(8000)  # type: ignore[misc]
    cfg = RepositoryConfig()
    with pytest.raises(AttributeError):
        cfg.max_batch_size = 3  # type: ignore[misc]


def test_to_dict_round_trips() -> None:
    cfg = Config.from_dict({"repository": {"bucket_lengths": [8, 16]}})
    assert Config.from_dict(cfg.to_dict()) == cfg


def test_config_file_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    bad = tmp_path / "textgate.yaml"
    bad.write_bytes(b"gateway:\n  port: 80\xff\n")
    with pytest.raises(ConfigError, match="not UTF-8.*offset 19"):
        Config.from_file(bad)


def test_config_file_with_hostile_nesting_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "textgate.yaml"
    bad.write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(ConfigError):
        Config.from_file(bad)


def test_auto_instances_run_one_single_threaded_session_per_core() -> None:
    from textgate.config import InstanceGroupConfig, RepositoryConfig

    auto = RepositoryConfig()
    assert (auto.model_instances(2), auto.intra_op_threads(2)) == (2, 1)
    assert (auto.model_instances(1), auto.intra_op_threads(1)) == (1, 1)
    assert (auto.model_instances(16), auto.intra_op_threads(16)) == (4, 4)  # capped at 4
    pinned = RepositoryConfig(instance_group=InstanceGroupConfig(count=1))
    assert (pinned.model_instances(8), pinned.intra_op_threads(8)) == (1, 8)
    three = RepositoryConfig(instance_group=InstanceGroupConfig(count=3))
    assert (three.model_instances(8), three.intra_op_threads(8)) == (3, 2)  # cores split
    threads = RepositoryConfig(ort_intra_op_threads=3)
    assert (threads.model_instances(2), threads.intra_op_threads(2)) == (2, 3)
    gpu = RepositoryConfig(instance_group=InstanceGroupConfig(kind="gpu"))
    assert (gpu.model_instances(8), gpu.intra_op_threads(8)) == (1, 0)
    container = RepositoryConfig(target="triton-container")
    assert (container.model_instances(8), container.intra_op_threads(8)) == (1, 0)


def test_a_release_command_is_an_argv_with_the_queue_id() -> None:
    command = ["/usr/local/sbin/textgate-release", "-c", "/etc/postfix", "{queue_id}"]
    cfg = Config.from_dict({"review": {"release_command": command}})
    assert cfg.review.release_command == tuple(command)
    assert Config().review.release_command == ()  # off by default: a release is an event only
