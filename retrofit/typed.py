"""Config nodes checked against their schema (a dataclass): the one place a node is merged onto it.

Every typed config of the harness (a variant spec, a host, the timing, a decomposition, a
pretraining run, a root config of `configs/`) goes through `typed` or `typed_object`, so an unknown
key, a value of the wrong type or a missing required value is refused the same way everywhere: an
error naming where, the key and the keys the schema has.
"""

from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from retrofit.errors import RetrofitError, listing

T = TypeVar("T")


def typed(schema: type, node: Any, where: str, error: type[RetrofitError] = RetrofitError) -> DictConfig:
    """`node` (a mapping or config node) merged onto the dataclass `schema`, its defaults filled in.

    Raises `error` "<where>: bad key '<key>' (<why>); keys: [...]" for an unknown key or a value of
    the wrong type. A config node is read as plain values first: a node already typed by `schema`
    would merge a key it gained through Hydra's `+key=value` unchecked."""
    try:
        return OmegaConf.merge(OmegaConf.structured(schema), _plain(node))
    except OmegaConfBaseException as err:
        raise error(_message(schema, err, where)) from None


def typed_object(schema: type[T], node: Any, where: str, error: type[RetrofitError] = RetrofitError) -> T:
    """`typed`, then the instance of `schema` (interpolations resolved); also refuses a required key
    left unset (`???`)."""
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), _plain(node)))
    except OmegaConfBaseException as err:
        raise error(_message(schema, err, where)) from None


def _plain(node: Any) -> Any:
    """`node` as plain containers (interpolations and `???` kept as written) when it is a config node."""
    return OmegaConf.to_container(node) if OmegaConf.is_config(node) else node


def _message(schema: type, err: OmegaConfBaseException, where: str) -> str:
    """The refusal, listing the keys of the (nested) schema the bad key belongs to."""
    owner = getattr(err, "object_type", None)
    keys = listing([field.name for field in fields(owner if is_dataclass(owner) else schema)])
    return f"{where}: bad key {err.full_key!r} ({str(err).splitlines()[0]}); keys: {keys}"
