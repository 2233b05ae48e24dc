"""A unit's identity (`retrofit.runner.identity`): pinned for a known case (the stored units and the
results of earlier runs keep matching), changed by every input it covers, the data's and host's
bytes, and the code digest following what the code does, not what it says."""

import shutil
from pathlib import Path

import pytest
from refusals import one_line

from retrofit.data import DatasetSpec
from retrofit.errors import RunnerError
from retrofit.runner import identity
from retrofit.runner.case import Case, UnitSpec
from retrofit.unit_key import UnitKey
from retrofit.variants import resolve_variant

ROOT = Path(__file__).resolve().parents[1]


def pinned_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Case:
    """A case on fixed bytes (a three-row CSV, a host file of 10 bytes) under fixed library versions
    and code digest, with an untimed unit beside two timed ones."""
    (tmp_path / "table.csv").write_text("x,y\n1,2.0\n2,3.5\n3,1.0\n")
    (tmp_path / "host.ckpt").write_bytes(b"host bytes")
    monkeypatch.setattr(identity, "version", lambda name: f"{name}-1.0")
    monkeypatch.setattr(identity, "code_digest", lambda: "c0dec0dec0dec0de")
    monkeypatch.setattr(identity, "check_checkpoint", Path)  # the bytes are the identity; validity is the host's
    spec = DatasetSpec.from_mapping({"name": "pinned", "source": "csv", "path": "table.csv", "target": "y"})
    units = (UnitSpec("baseline"), UnitSpec("oa_only"), UnitSpec("full_o", {"tau": 0.01}, timed=False))
    return Case(
        spec,
        3,
        tmp_path / "host.ckpt",
        tmp_path,
        n_estimators=2,
        host="pinned_host",
        units=units,
        runs_dir=tmp_path / "runs",
        timing_rounds=3,
    )


def test_a_known_cases_identities_are_the_ones_stored_units_were_filed_under(tmp_path, monkeypatch):
    """The digests this case's units had before the identity got its own module (computed there,
    with the same fixed inputs): the formula is unchanged, so a unit stored by it is found again."""
    case = pinned_case(tmp_path, monkeypatch)
    key = UnitKey("pinned_host", "pinned", 3, "{}", "")
    assert case.identities == {
        key._replace(variant="baseline"): "7808cf1f8f58168b",
        key._replace(variant="oa_only"): "1315d22bd207b5b5",
        key._replace(variant="full_o", hparams="tau=0.01"): "bd1eeee52770709f",
    }
    assert (case.host_digest, case.data_digest) == ("43bcde663fb99877", "956e0f62a5fb3625")


def test_every_input_of_an_identity_changes_it(tmp_path, monkeypatch):
    """One changed setting, version, key, variant or timing setting is another unit."""
    case = pinned_case(tmp_path, monkeypatch)
    settings = identity.case_settings(case, threads=1, host="h", data="d")
    assert sorted(settings) == sorted(
        ["host", "data", "dataset", "seed", "n_estimators", "test_size", "device", "precision", "threads"]
    )
    key, variant = UnitKey("h", "d", 0, "oa_only"), resolve_variant("oa_only")

    def one(settings=settings, key=key, variant=variant, timing=(3, 1)) -> str:
        (only,) = identity.unit_identities(settings, [(key, variant, timing)]).values()
        return only

    changed = [one(settings={**settings, name: f"{value}!"}) for name, value in settings.items()]
    changed += [one(key=key._replace(hparams="tau=0.01")), one(variant=resolve_variant("oa_only", tau=0.01))]
    changed += [one(timing=(0, 0)), one(timing=(3, 2))]
    for name in [*identity.LIBRARIES, "code"]:
        env = identity.environment() | {name: "0.0"}
        with monkeypatch.context() as patch:
            patch.setattr(identity, "environment", lambda env=env: env)
            changed.append(one())
    assert len(set(changed)) == len(changed) == len(settings) + 4 + len(identity.LIBRARIES) + 1
    assert one() not in changed and one() == one()


def test_a_file_is_identified_by_its_bytes(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    shutil.copy(tmp_path / "a.csv", tmp_path / "b.csv")
    spec = DatasetSpec.from_mapping({"name": "a", "source": "csv", "path": "a.csv", "target": "y"})
    assert identity.data_digest(spec, tmp_path) == identity.file_digest(tmp_path / "b.csv")
    (tmp_path / "a.csv").write_text("x,y\n1,3\n")
    assert identity.data_digest(spec, tmp_path) != identity.file_digest(tmp_path / "b.csv")
    loader = DatasetSpec.from_mapping({"name": "d", "source": "sklearn", "loader": "load_diabetes", "target": "t"})
    assert identity.data_digest(loader, tmp_path).startswith("sklearn:load_diabetes@scikit-learn ")


def test_a_missing_csv_is_named_with_the_fix(tmp_path):
    spec = DatasetSpec.from_mapping({"name": "gone", "source": "csv", "path": "gone.csv", "target": "y"})
    with pytest.raises(RunnerError, match=r"dataset 'gone': CSV file .*gone\.csv does not exist; fix `path`") as err:
        identity.data_digest(spec, tmp_path)
    one_line(err)


def test_code_digest_follows_what_the_code_does_not_what_it_says(tmp_path):
    """A comment or docstring edit keeps every cached unit, as does a change of how results are
    read back and shown; a change of the code that computes numbers makes them stale."""
    package = tmp_path / "retrofit"
    shutil.copytree(ROOT / "retrofit" / "runner", package / "runner", ignore=shutil.ignore_patterns("__pycache__"))
    path = package / "runner" / "identity.py"
    source = path.read_text()

    def digest_of(text: str) -> str:
        path.write_text(text)
        identity.code_digest.cache_clear()
        return identity.code_digest(package)

    try:
        before = digest_of(source)
        said = source.replace('"""A unit\'s identity: the digest', '"""A unit\'s identity (reworded): the digest', 1)
        said = said.replace("def case_settings(", "# a comment\ndef case_settings(", 1)
        assert said != source and digest_of(said) == before
        done = source.replace('"threads": threads,', '"threads": threads + 1,', 1)
        changed = digest_of(done)
        assert done != source and changed != before
        (package / "notes.txt").write_text("not source")
        for shown in ("__init__.py", "finish.py"):  # the console and the run's end: no number changes
            (package / "runner" / shown).write_text((package / "runner" / shown).read_text() + "\nSHOWN_ONLY = 1\n")
        assert digest_of(done) == changed  # only the source of what computes numbers counts
    finally:
        identity.code_digest.cache_clear()
