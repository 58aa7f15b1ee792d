"""The shipped accelerate configs parse with accelerate's own loader and say what they promise."""

import pytest
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.utils import DistributedType

from tests.conftest import REPO_ROOT

CONFIGS = REPO_ROOT / "recipes" / "accelerate"


@pytest.mark.parametrize(
    "name,kind,machines",
    [("single_gpu", DistributedType.NO, 1), ("multi_gpu", DistributedType.MULTI_GPU, 1), ("multi_node", DistributedType.MULTI_GPU, 2)],
)
def test_config_loads(name, kind, machines):
    config = load_config_from_file(str(CONFIGS / f"{name}.yaml"))
    assert config.distributed_type == kind and config.num_machines == machines
    assert config.num_processes % machines == 0
    assert f"recipes/accelerate/{name}.yaml" in (REPO_ROOT / "README.md").read_text()
