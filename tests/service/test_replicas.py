"""Read replicas: one writer and two `--replica` services over the same LanceDB index, each a real `hfsiamese serve`
on its own loopback port. A write the writer acknowledged shows on every replica within the refresh interval plus
one reopening; a replica refuses writes; and it refuses an index kept in a folder, which no other process reaches."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from hfsiamese.service.settings import ServeSettings
from tests.conftest import TEXTS
from tests.service.running_service import READ_KEY, WRITE_KEY, RunningService, lancedb_index_dir

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

REFRESH_S = 0.5
VISIBLE_WITHIN_S = 30.0  # the refresh interval plus one reopening, on two shared cores
NEW_TEXT = "how many moons does jupiter have today ?"


@pytest.fixture(scope="module")
def services(tmp_path_factory, model_dir, keys_file):
    index_dir = lancedb_index_dir(tmp_path_factory.mktemp("replica_index"), model_dir)
    flags = ("--replica", "--replica_refresh_s", str(REFRESH_S))
    with ThreadPoolExecutor(3) as pool:  # started side by side: each waits for its own readiness
        starting = [pool.submit(RunningService, index_dir, model_dir, keys_file=keys_file)]
        starting += [pool.submit(RunningService, index_dir, model_dir, *flags, keys_file=keys_file) for _ in "ab"]
        writer, *replicas = [future.result() for future in starting]
    yield writer, replicas
    for running in (writer, *replicas):
        running.stop()


def until(condition, within: float = VISIBLE_WITHIN_S) -> float:
    """Seconds until `condition()` held (polled), or the test fails after `within`."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < within, f"not seen within {within} s"
        time.sleep(0.1)
    return time.monotonic() - start


def found(url: str, question_id: int) -> bool:
    response = httpx.post(f"{url}/v1/search", json={"query": NEW_TEXT, "k": 3}, headers={"X-API-Key": READ_KEY})
    assert response.status_code == 200, response.text
    return any(match["id"] == question_id for match in response.json()["results"][0]["matches"])


def test_a_write_acknowledged_by_the_writer_shows_on_every_replica(services):
    writer, replicas = services
    write = {"Authorization": f"Bearer {WRITE_KEY}"}
    assert not any(found(replica.url, 500) for replica in replicas)
    added = httpx.post(f"{writer.url}/v1/questions", json={"questions": [{"id": 500, "text": NEW_TEXT}]}, headers=write)
    assert added.status_code == 201, added.text
    group = added.json()["added"][0]["group"]
    for replica in replicas:
        until(lambda url=replica.url: found(url, 500))
        answer = httpx.get(f"{replica.url}/v1/questions/500/group", headers={"X-API-Key": READ_KEY})
        assert answer.status_code == 200 and answer.json()["group"] == group, answer.text  # the groups too
        assert httpx.get(f"{replica.url}/v1/info", headers=write).json()["size"] == len(TEXTS) + 1
    deleted = httpx.delete(f"{writer.url}/v1/questions/500", headers=write)
    assert deleted.status_code == 200, deleted.text
    for replica in replicas:
        until(lambda url=replica.url: not found(url, 500))


def test_a_replica_refuses_writes_even_with_a_write_key(services):
    _, replicas = services
    write = {"Authorization": f"Bearer {WRITE_KEY}"}
    response = httpx.post(
        f"{replicas[0].url}/v1/questions", json={"questions": [{"id": 501, "text": "a"}]}, headers=write
    )
    assert response.status_code == 403 and "read replica" in response.json()["error"]["message"]
    assert httpx.get(f"{replicas[1].url}/v1/info", headers=write).json()["read_only"] is True


def test_a_replica_needs_a_database_index(tmp_path, model_dir):
    from hfsiamese import SiameseModel
    from hfsiamese.search import DuplicateIndex
    from hfsiamese.service.service import DuplicateService

    DuplicateIndex.build(TEXTS, SiameseModel.from_pretrained(model_dir)).save(tmp_path / "index")
    settings = ServeSettings(index_dir=str(tmp_path / "index"), model_name_or_path=str(model_dir), replica=True)
    with pytest.raises(ValueError, match="a replica .* needs an index whose rows are in a database"):
        DuplicateService.open(settings)
    with pytest.raises(ValueError, match="refresh interval must be above 0 s"):
        ServeSettings(index_dir="i", model_name_or_path="m", replica=True, replica_refresh_s=0)
    with pytest.raises(ValueError, match="a replica never writes, so it cannot group the index"):
        ServeSettings(index_dir="i", model_name_or_path="m", replica=True, find_groups=True)
