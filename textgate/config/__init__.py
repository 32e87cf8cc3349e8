"""textgate's configuration: frozen keyword-only dataclasses, one per section.

A configuration is read from a YAML file (``Config.from_file``) or a dict
(``Config.from_dict``), then environment overrides ``TEXTGATE_<SECTION>__<KEY>`` (nested
keys joined by ``__``, e.g. ``TEXTGATE_REPOSITORY__DYNAMIC_BATCHING__MAX_QUEUE_DELAY_MICROSECONDS``)
are applied on top. Every problem is a ``ConfigError`` that names the dotted key.

One module per concern: ``serving`` (triton, repository, client), ``gateway``, ``policy``,
``events``, ``release``, ``mail`` (mail, feedback, review), ``normalize``; ``loader`` fills
them from YAML and the environment. Import the sections from here.

To add a section: write a frozen keyword-only dataclass whose ``__post_init__`` validates
with ``checks.require`` (naming keys relative to the section), then add it as a field of
``Config``. The loader walks the type hints; no other code changes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from textgate.config.events import EventsConfig, KafkaConfig, default_outbox_path
from textgate.config.gateway import GatewayConfig
from textgate.config.loader import ENV_PREFIX, build, env_tree, merge, plain
from textgate.config.mail import FeedbackConfig, MailConfig, MilterReply, ReviewConfig
from textgate.config.normalize import NormalizeConfig
from textgate.config.policy import LabelRule, PolicyConfig, TaskPolicyConfig, TenantConfig
from textgate.config.release import CompareSample, ReleaseConfig
from textgate.config.serving import (
    VARIANTS,
    ClientConfig,
    DynamicBatchingConfig,
    InstanceGroupConfig,
    RepositoryConfig,
    TritonConfig,
    VersionPolicyConfig,
)
from textgate.errors import ConfigError

__all__ = [
    "ENV_PREFIX",
    "VARIANTS",
    "ClientConfig",
    "CompareSample",
    "Config",
    "DynamicBatchingConfig",
    "EventsConfig",
    "FeedbackConfig",
    "GatewayConfig",
    "InstanceGroupConfig",
    "KafkaConfig",
    "LabelRule",
    "MailConfig",
    "MilterReply",
    "NormalizeConfig",
    "PolicyConfig",
    "ReleaseConfig",
    "RepositoryConfig",
    "ReviewConfig",
    "TaskPolicyConfig",
    "TenantConfig",
    "TritonConfig",
    "VersionPolicyConfig",
    "default_outbox_path",
]


@dataclass(frozen=True, kw_only=True)
class Config:
    """All sections. Add a section by adding a field here."""

    triton: TritonConfig = field(default_factory=TritonConfig)
    repository: RepositoryConfig = field(default_factory=RepositoryConfig)
    client: ClientConfig = field(default_factory=ClientConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    events: EventsConfig = field(default_factory=EventsConfig)
    release: ReleaseConfig = field(default_factory=ReleaseConfig)
    mail: MailConfig = field(default_factory=MailConfig)
    feedback: FeedbackConfig = field(default_factory=FeedbackConfig)
    review: ReviewConfig = field(default_factory=ReviewConfig)
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any] | None, *, env: Mapping[str, str] | None = None
    ) -> Config:
        """Build from a plain dict, then apply ``env`` overrides (pass ``os.environ``)."""
        merged = merge(dict(data or {}), env_tree(env or {}))
        return build(cls, merged, "")

    @classmethod
    def from_file(cls, path: Path | str, *, env: Mapping[str, str] | None = None) -> Config:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError("<file>", f"cannot read {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                "<file>",
                f"{path} is not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
                hint="save the config file as UTF-8",
            ) from None
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            raise ConfigError("<file>", f"{path} is not valid YAML: {exc}") from exc
        if data is not None and not isinstance(data, dict):
            raise ConfigError("<file>", f"{path} must hold a mapping of sections")
        return cls.from_dict(data, env=env)

    @classmethod
    def load(cls, path: Path | str | None = None) -> Config:
        """The usual entry point: an optional file plus the process environment."""
        if path is None:
            return cls.from_dict(None, env=os.environ)
        return cls.from_file(path, env=os.environ)

    def to_dict(self) -> dict[str, Any]:
        return plain(dataclasses.asdict(self))
