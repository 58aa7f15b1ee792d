"""`hfsiamese.utils.openmp_defaults`: a short OpenMP spin unless the user chose, set before torch loads, by every recipe (a
library import sets nothing: tests/test_cpu_policy.py)."""

import os
import subprocess
import sys

import pytest

from hfsiamese.utils.openmp_defaults import SPIN_COUNT, apply_openmp_defaults
from tests.conftest import REPO_ROOT


def test_set_where_nobody_chose_and_torch_is_not_loaded():
    environ = {}
    assert apply_openmp_defaults(environ, torch_loaded=False).startswith(f"GOMP_SPINCOUNT={SPIN_COUNT}")
    assert environ == {"GOMP_SPINCOUNT": str(SPIN_COUNT)}


@pytest.mark.parametrize("given", [{"GOMP_SPINCOUNT": "300000"}, {"OMP_WAIT_POLICY": "PASSIVE"}])
def test_the_user_s_own_setting_wins(given):
    environ = dict(given)
    assert "set by the user" in apply_openmp_defaults(environ, torch_loaded=False)
    assert environ == given


def test_opting_out_and_too_late_leave_the_runtime_as_it_ships():
    environ = {"HFSIAMESE_OMP_DEFAULTS": "0"}
    assert "left as the runtime ships it" in apply_openmp_defaults(environ, torch_loaded=False)
    environ = {}
    assert "torch was imported before hfsiamese" in apply_openmp_defaults(environ, torch_loaded=True) and environ == {}


@pytest.mark.parametrize("recipe", ["train", "distill", "evaluate_pairs", "search", "calibrate", "export", "app"])
@pytest.mark.slow
def test_every_recipe_sets_it_before_torch_loads(recipe):
    """Each recipe, imported as its script runs (its path as the program), in a fresh interpreter: the setting is made,
    not 'too late', and its `__main__` block applies the commands' other defaults."""
    path = REPO_ROOT / "recipes" / f"{recipe}.py"
    assert "apply_command_defaults()" in path.read_text().split('if __name__ == "__main__":')[-1]
    code = (
        f"import importlib.util, sys; sys.argv = [{str(path)!r}]; "
        f"spec = importlib.util.spec_from_file_location('recipe', {str(REPO_ROOT / 'recipes' / f'{recipe}.py')!r}); "
        "module = importlib.util.module_from_spec(spec); sys.modules['recipe'] = module; spec.loader.exec_module(module); "
        "import hfsiamese.utils.openmp_defaults as o; print(o.applied())"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1].startswith(f"GOMP_SPINCOUNT={SPIN_COUNT}")
