"""The package's kernels are cached with a stamp of every file they can be compiled from
(:mod:`vm_dynamics.dynamics.fast.kernels.cache`); other packages' functions keep numba's own
cache locators.  (That a changed file really makes the cached kernels compile again is tested
with processes in ``test/process/test_kernel_cache.py``.)"""
import pytest

numba = pytest.importorskip("numba")

from vm_dynamics.dynamics.fast.kernels import cache, checked  # noqa: E402


def test_the_stamp_covers_the_kernels_and_the_modules_they_import_only():
    files = set(cache.stamped_files())
    for rel in ("dynamics/fast/kernels/algebra.py", "dynamics/fast/kernels/kinematics.py",
                "dynamics/fast/kernels/checked.py", "sim/kernels.py", "forces/kernels.py",
                "control/laws.py", "analysis/euler_kernels.py", "capture/orbit_kernels.py",
                "capture/stage_kernels.py",
                # no kernel, but constants and records the kernels are compiled with
                "core/validation.py", "dynamics/fast/records.py", "sim/records.py"):
        assert rel in files, rel
    for rel in ("app/cli.py", "app/compile.py", "nodes/launching.py", "dynamics/fast/backend.py",
                "capture/system.py", "capture/compiled_stage.py", "capture/orbit.py"):
        assert rel not in files, rel
    assert len(cache.package_stamp()) == 64


def test_the_package_kernels_carry_the_stamp():
    assert cache.install()          # installed by jit.py already: nothing added twice
    from numba.core import caching
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    assert sum(getattr(c, "stamped_package", None) == "vm_dynamics"
               for c in impl._locator_classes) == len(impl._locator_classes) // 2
    stamp = checked.pose_in_range._cache._cache_file._source_stamp
    assert stamp[1] == cache.package_stamp()


def test_other_packages_keep_numbas_locators(tmp_path, monkeypatch):
    (tmp_path / "other_pkg_probe.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import other_pkg_probe
    locator = other_pkg_probe.f._cache._impl.locator
    assert not hasattr(locator, "stamped_package")
    assert not isinstance(other_pkg_probe.f._cache._cache_file._source_stamp, tuple)
