"""Tables kept on disk between processes: saved once, loaded after, rebuilt when the file is
damaged, foreign or unwritable, and the place tables loaded equal the ones built."""

from __future__ import annotations

import gc
import pickle
from pathlib import Path

import pytest

from server import diskcache, places


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("CONTACTDATA_CACHE_DIR", str(folder))
    return folder


class Builder:
    def __init__(self, table: object) -> None:
        self.table, self.calls = table, 0

    def __call__(self) -> object:
        self.calls += 1
        return self.table


def test_the_first_process_builds_and_saves_the_next_loads(cache: Path) -> None:
    build = Builder({("austin", "US-TX"): (30.27, -97.74)})
    assert diskcache.load_or_build("table", "f1", build) == build.table
    assert build.calls == 1
    path = cache / "table-f1.pickle"
    assert pickle.loads(path.read_bytes()) == build.table
    assert path.stat().st_mode & 0o777 == 0o600 and cache.stat().st_mode & 0o777 == 0o700
    assert diskcache.load_or_build("table", "f1", build) == build.table
    assert build.calls == 1
    assert [p.name for p in cache.iterdir()] == ["table-f1.pickle"]  # no temporary file left


def test_a_new_fingerprint_builds_again_and_removes_the_old_file(cache: Path) -> None:
    diskcache.load_or_build("table", "f1", Builder([1]))
    diskcache.load_or_build("other", "f1", Builder([2]))
    build = Builder([3])
    assert diskcache.load_or_build("table", "f2", build) == [3] and build.calls == 1
    assert sorted(p.name for p in cache.iterdir()) == ["other-f1.pickle", "table-f2.pickle"]


@pytest.mark.parametrize(
    "damage",
    [b"", b"not a pickle", pickle.dumps([1, 2, 3])[:-3]],
    ids=["empty", "garbage", "truncated"],
)
def test_a_damaged_file_is_built_again_and_replaced(cache: Path, damage: bytes) -> None:
    cache.mkdir(mode=0o700)
    path = cache / "table-f1.pickle"
    path.write_bytes(damage)
    path.chmod(0o600)
    build = Builder(["rebuilt"])
    assert diskcache.load_or_build("table", "f1", build) == ["rebuilt"] and build.calls == 1
    assert pickle.loads(path.read_bytes()) == ["rebuilt"]


def test_a_file_others_can_write_is_never_loaded(cache: Path) -> None:
    cache.mkdir()
    path = cache / "table-f1.pickle"
    path.write_bytes(pickle.dumps(["planted"]))
    path.chmod(0o666)
    build = Builder(["ours"])
    assert diskcache.load_or_build("table", "f1", build) == ["ours"] and build.calls == 1
    assert pickle.loads(path.read_bytes()) == ["ours"]  # replaced by a private file
    assert path.stat().st_mode & 0o777 == 0o600


def test_an_unwritable_cache_directory_builds_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTDATA_CACHE_DIR", "/proc/self")  # not writable, even by root
    build = Builder(["in memory"])
    assert diskcache.load_or_build("table", "f1", build) == ["in memory"]
    assert diskcache.load_or_build("table", "f1", build) == ["in memory"]
    assert build.calls == 2


def test_a_cache_path_that_is_a_file_builds_in_memory(cache: Path) -> None:
    cache.write_text("not a directory")
    build = Builder(["in memory"])
    assert diskcache.load_or_build("table", "f1", build) == ["in memory"]
    assert build.calls == 1 and cache.read_text() == "not a directory"


def test_off_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTDATA_CACHE_DIR", "off")
    monkeypatch.chdir(tmp_path)
    build = Builder(["fresh"])
    for _ in range(2):
        assert diskcache.load_or_build("table", "f1", build) == ["fresh"]
    assert build.calls == 2 and list(tmp_path.iterdir()) == []


def test_the_default_directory_follows_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTACTDATA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert diskcache.directory() == Path("/somewhere/cache/contactdata")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert diskcache.directory() == Path.home() / ".cache" / "contactdata"


def test_place_tables_loaded_from_disk_equal_the_built_ones(cache: Path) -> None:
    built = places._build_tables()
    fingerprint = places._fingerprint()
    diskcache.load_or_build("places", fingerprint, lambda: built)
    loaded = diskcache.load_or_build("places", fingerprint, pytest.fail)
    assert loaded is not built and loaded == built
    # What the indexes share is one object after loading too, as it was when built.
    city_ids = {id(city) for city in loaded.cities}
    assert {id(city) for city in loaded.city_index.values()} <= city_ids
    zip_ids = {id(zip_code) for zip_code in loaded.zips.values()}
    assert {id(z) for zips in loaded.zips_by_area.values() for z in zips} <= zip_ids


def test_the_fingerprint_changes_with_the_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    before = places._fingerprint()
    assert before == places._fingerprint() and len(before) == 16
    monkeypatch.setattr(places.metadata, "version", lambda package: "99.0")
    assert places._fingerprint() != before


def test_loading_leaves_the_garbage_collector_as_it_was(cache: Path) -> None:
    diskcache.load_or_build("table", "f1", Builder([1]))
    gc.disable()
    try:
        assert diskcache.load_or_build("table", "f1", pytest.fail) == [1]
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert diskcache.load_or_build("table", "f1", pytest.fail) == [1] and gc.isenabled()
