"""Hostile and careless files at every entry point: a xacro that runs code or explodes, a
parameter file nested or long enough to stall the YAML parser, a URDF with 10 000 links, an
output directory that is ``/`` or a link into ``/etc``.

Each is refused with one line naming the file and the limit, a non-zero exit and no traceback
(issue 28, items 4, 9 and 11); the limits make every case finish, so no test asserts a time."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml
from processes import dds_env

from vm_dynamics.app import cli
from vm_dynamics.config.params import MAX_PARAMS_DEPTH, MAX_PARAMS_NODES
from vm_dynamics.config.scenario import load_scenario, share_dir
from vm_dynamics.model import xacro_expansion
from vm_dynamics.model.urdf import MAX_LINKS, MAX_URDF_BYTES

BIN = Path(sys.executable).parent
XACRO_NS = 'xmlns:xacro="http://www.ros.org/wiki/xacro"'
BASE_LINK = ('<link name="base"><inertial><mass value="${m}"/><inertia ixx="1" iyy="1" izz="1" '
             'ixy="0" ixz="0" iyz="0"/></inertial></link>\n')


# ----------------------------------------------------------------------------- files
def hex_eval_xacro(tmp_path: Path) -> tuple[Path, Path]:
    """A xacro whose ``$(eval ${p})`` runs code built from hex (it creates a marker file);
    returns (xacro, marker)."""
    marker = tmp_path / "pwned"
    code = f"open({str(marker)!r}, 'w').write('x')".encode().hex()
    path = tmp_path / "evil.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="e" {XACRO_NS}>\n'
                    f'<xacro:property name="m" value="1.0"/>\n'
                    f'<xacro:property name="p" value="exec(bytes.fromhex(\'{code}\').decode())"/>\n'
                    + BASE_LINK.replace("</link>", '<visual><geometry><box size="$(eval ${p})"/>'
                                                   '</geometry></visual></link>')
                    + "</robot>\n")
    return path, marker


def chained_power_xacro(tmp_path: Path, levels: int = 4) -> Path:
    """p0 = 2**64, p(k+1) = p(k)**64: each level alone passes a per-expression power guard."""
    props = '<xacro:property name="p0" value="${2**64}"/>\n' + "".join(
        f'<xacro:property name="p{k + 1}" value="${{p{k}**64}}"/>\n' for k in range(levels))
    path = tmp_path / "power.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="b" {XACRO_NS}>\n{props}'
                    f'<xacro:property name="m" value="${{1 + p{levels} % 7}}"/>\n'
                    + BASE_LINK + "</robot>\n")
    return path


def macro_bomb_xacro(tmp_path: Path, levels: int = 16) -> Path:
    """m(k+1) calls m(k) twice: 2**levels expansions of m0."""
    macros = '<xacro:macro name="m0"><dummy/></xacro:macro>\n' + "".join(
        f'<xacro:macro name="m{k + 1}"><xacro:m{k}/><xacro:m{k}/></xacro:macro>\n'
        for k in range(levels))
    path = tmp_path / "macro.urdf.xacro"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="b" {XACRO_NS}>\n'
                    f'<xacro:property name="m" value="1.0"/>\n{macros}{BASE_LINK}'
                    f'<xacro:m{levels}/>\n</robot>\n')
    return path


def chain_urdf(n: int) -> str:
    """A URDF chain of ``n`` revolute joints (n + 1 links)."""
    inertial = ('<inertial><mass value="1"/><origin xyz="0.05 0 0"/><inertia ixx="0.01" '
                'iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>')
    links = [f'<link name="base">{inertial}</link>'] + [
        f'<link name="l{i}">{inertial}</link>' for i in range(1, n + 1)]
    joints = [f'<joint name="j{i}" type="revolute"><parent link="{"base" if i == 1 else f"l{i - 1}"}"/>'
              f'<child link="l{i}"/><origin xyz="0.1 0 0"/><axis xyz="0 0 1"/>'
              f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
              for i in range(1, n + 1)]
    return '<robot name="chain">' + "".join(links) + "".join(joints) + "</robot>"


def scenario_file(tmp_path: Path, urdf: Path | None = None, name: str = "custom.yaml",
                  **params) -> Path:
    """config/tumbling.yaml with another robot and parameters, as a scenario file."""
    from vm_dynamics.config.params import read_params_file
    p = read_params_file(share_dir() / "config" / "tumbling.yaml")
    p["robot_description_file"] = str(urdf) if urdf else str(
        share_dir() / "urdf" / p["robot_description_file"])
    if urdf is not None:
        p["base_type"] = "fixed"
        p.pop("initial", None)
    p.update(params)
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": p}}))
    return path


def nested_params_file(tmp_path: Path, depth: int = 100_000) -> Path:
    """A 200 kB parameter file: one value that is a list nested ``depth`` deep."""
    path = tmp_path / "nested.yaml"
    path.write_text("/**:\n  ros__parameters:\n    x: " + "[" * depth + "]" * depth + "\n")
    return path


def long_params_file(tmp_path: Path, n: int) -> Path:
    """A parameter file with one flat list of ``n`` numbers."""
    path = tmp_path / f"long{n}.yaml"
    path.write_text("/**:\n  ros__parameters:\n    x: [" + ", ".join(["1.25"] * n) + "]\n")
    return path


def run(argv, tmp_path, timeout=120, domain=83):
    """Run an executable to its end: (exit code, stdout + stderr)."""
    p = subprocess.run(argv, env=dds_env(domain), cwd=tmp_path, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def assert_one_clean_error(rc, text, *needles):
    assert rc != 0, text
    assert "Traceback" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)


# ===================================================================== 4. one xacro policy
def test_vm_sim_honours_robot_description_xacro_from_the_scenario_and_p(tmp_path, capsys):
    """Item 4: vm-sim expanded the scenario's xacro with every feature whatever
    ``robot_description_xacro`` said; the default is safe, and full is an explicit opt-in."""
    xacro, marker = hex_eval_xacro(tmp_path)
    with_key = scenario_file(tmp_path, xacro, "with_key.yaml", robot_description_xacro="safe")
    without = scenario_file(tmp_path, xacro, "without.yaml")
    for argv in ([str(with_key)], [str(without), "-p", "robot_description_xacro:=safe"],
                 [str(without)]):
        assert cli.main(argv + ["--out", str(tmp_path / "o"), "--no-plots", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "evil.urdf.xacro: xacro expansion failed: xacro='safe': substitution $(eval …) " \
               "is not allowed" in err and err.count("\n") == 1, err
        assert not marker.exists(), argv
    assert cli.main([str(without), "-p", "robot_description_xacro:=bogus", "--out",
                     str(tmp_path / "o")]) == 2
    assert "robot_description_xacro='bogus': choose one of full, safe, off" in \
        capsys.readouterr().err
    # a trusted file: the user opts into full xacro, and then it really is evaluated
    load_scenario(str(without), {"robot_description_xacro": "full"})
    assert marker.exists()


def test_launch_files_expand_xacro_safely_by_default(tmp_path):
    """Item 4: sim.launch.py and hil.launch.py expand the scenario's URDF with
    ``robot_descriptions(read_params_file(scenario))``, which defaulted to full xacro."""
    from vm_dynamics.config.params import read_params_file
    from vm_dynamics.nodes.robot import robot_descriptions
    xacro, marker = hex_eval_xacro(tmp_path)
    for params in (read_params_file(scenario_file(tmp_path, xacro)),
                   {"robot_description_file": str(xacro), "robot_description_xacro": "safe"}):
        with pytest.raises(ValueError, match=r"substitution \$\(eval …\) is not allowed"):
            robot_descriptions(params)
        assert not marker.exists()
    node_urdf, _ = robot_descriptions({"robot_description_file": str(
        share_dir() / "urdf" / "spacecraft_arm.urdf.xacro")})
    assert "<robot" in node_urdf and "<xacro:" not in node_urdf


def test_every_entry_point_has_the_same_safe_default(tmp_path):
    """Item 4: the library (load_model, read_urdf_source), the nodes' robot loading, the
    viewer's and recorder's URDF tree: one policy, safe unless the caller says full."""
    import vm_dynamics as vm
    from vm_dynamics.model.urdf import read_urdf_source
    from vm_dynamics.nodes.robot import load_robot
    from vm_dynamics.ros.urdf_tf import UrdfTree
    xacro, marker = hex_eval_xacro(tmp_path)
    for load in (lambda: vm.load_model(str(xacro), base="fixed"),
                 lambda: read_urdf_source(str(xacro)),
                 lambda: load_robot({"robot_description_file": str(xacro), "base_type": "fixed"}),
                 lambda: UrdfTree(str(xacro))):
        with pytest.raises(ValueError, match=r"substitution \$\(eval …\) is not allowed"):
            load()
    assert not marker.exists()


def test_xacro_bombs_fail_within_the_budget_with_a_clear_error(tmp_path):
    """Item 4: chained powers got round the power guard (3 levels: 35 s) and 2**16 macro
    expansions took minutes; now each is refused by a bound, and anything that escapes the
    bounds by the time budget of the expansion process."""
    import vm_dynamics as vm
    power = chained_power_xacro(tmp_path)
    with pytest.raises(ValueError, match=r"power.urdf.xacro: xacro expansion failed: "
                                         r"xacro='safe': expression 'p0\*\*64': the result is "
                                         r"out of range"):
        vm.load_model(str(power), base="fixed")
    bomb = macro_bomb_xacro(tmp_path)
    for mode in ("safe", "full"):
        with pytest.raises(ValueError, match=r"macro.urdf.xacro: xacro expansion failed: more "
                                             r"than 10000 macro expansions"):
            vm.load_model(str(bomb), base="fixed", xacro=mode)
    # full xacro computes the huge integers (trusted code may): the time budget ends it
    with pytest.raises(ValueError, match=r"power.urdf.xacro: xacro expansion failed: did not "
                                         r"finish within 0.5 s"):
        xacro_expansion.expand_xacro(power, "full", time_budget=0.5)
    # the output and the memory of one expansion are bounded too
    small_bomb = macro_bomb_xacro(tmp_path, levels=9)         # 2.5 kB in, 9 kB out
    with pytest.raises(ValueError, match=r"the expanded URDF has \d+ bytes; at most 4000"):
        xacro_expansion.expand_xacro(small_bomb, max_bytes=4000)
    strings = tmp_path / "strings.urdf.xacro"
    strings.write_text(f'<robot name="s" {XACRO_NS}><xacro:property name="s0" value="x"/>'
                       + "".join(f'<xacro:property name="s{k + 1}" value="${{s{k}}}${{s{k}}}"/>'
                                 for k in range(40))
                       + '<link name="${s40}"/></robot>')
    with pytest.raises(ValueError, match=r"property 's14' is a string of 16384 characters; "
                                         r"at most 10000"):
        xacro_expansion.expand_xacro(strings, "safe")
    with pytest.raises(ValueError, match=r"xacro expansion failed: (needs more than 200 MiB of "
                                         r"memory|was killed)"):
        xacro_expansion.expand_xacro(strings, "full", memory_budget=200 * 2**20)


def test_safe_xacro_includes_only_regular_files(tmp_path):
    inc = tmp_path / "inc.urdf.xacro"
    inc.write_text(f'<robot name="i" {XACRO_NS}><xacro:include filename="/dev/zero"/></robot>')
    with pytest.raises(ValueError, match=r"inc.urdf.xacro: xacro expansion failed: "
                                         r"xacro='safe': /dev/zero is not a regular file"):
        xacro_expansion.expand_xacro(inc)


def test_expansions_are_cached_until_a_file_changes(tmp_path):
    main = tmp_path / "r.urdf.xacro"
    part = tmp_path / "part.xacro"
    part.write_text(f'<robot {XACRO_NS}><xacro:property name="m" value="2.0"/></robot>')
    main.write_text(f'<robot name="r" {XACRO_NS}><xacro:include filename="part.xacro"/>'
                    + BASE_LINK + "</robot>")
    first = xacro_expansion.expand_xacro(main)
    assert 'value="2.0"' in first and xacro_expansion.expand_xacro(main) is first
    part.write_text(f'<robot {XACRO_NS}><xacro:property name="m" value="3.5"/></robot>  ')
    assert 'value="3.5"' in xacro_expansion.expand_xacro(main)


# ================================================================= 9. parameter and model files
def test_nodes_refuse_a_deeply_nested_parameter_file_at_once(tmp_path):
    """Item 9: a 200 kB nested list took > 90 s of parsing (PyYAML is quadratic in depth)."""
    nested = nested_params_file(tmp_path)
    for exe in ("dynamics_node", "controller_node"):
        rc, text = run([str(BIN / exe), "--ros-args", "--params-file", str(nested)], tmp_path)
        assert_one_clean_error(rc, text, f"params file {str(nested)!r}: invalid YAML: nested "
                               f"deeper than {MAX_PARAMS_DEPTH} levels")
    long = long_params_file(tmp_path, MAX_PARAMS_NODES + 10)
    rc, text = run([str(BIN / "dynamics_node"), "--ros-args", "--params-file", str(long)],
                   tmp_path)
    assert_one_clean_error(rc, text, f"params file {str(long)!r}: invalid YAML: more than "
                           f"{MAX_PARAMS_NODES} values")
    big = tmp_path / "big.yaml"
    big.write_text("/**:\n  ros__parameters:\n    s: '" + "x" * (5 * 2**20) + "'\n")
    rc, text = run([str(BIN / "dynamics_node"), "--ros-args", "--params-file", str(big)],
                   tmp_path)
    assert_one_clean_error(rc, text, f"params file {str(big)!r}: larger than 4194304 bytes")


def test_vm_sim_refuses_deeply_nested_yaml_without_a_traceback(tmp_path):
    """Item 9: vm-sim died with RecursionError (traceback, exit 1)."""
    nested = nested_params_file(tmp_path, depth=3000)
    rc, text = run([str(BIN / "vm-sim"), str(nested)], tmp_path)
    assert rc == 2
    assert_one_clean_error(rc, text, f"vm-sim: error: {nested}: invalid YAML: nested deeper "
                           f"than {MAX_PARAMS_DEPTH} levels")
    rc, text = run([str(BIN / "vm-sim"), "tumbling", "-p", "x:=" + "[" * 3000 + "]" * 3000],
                   tmp_path)
    assert rc == 2
    assert_one_clean_error(rc, text, "invalid YAML: nested deeper than")


@pytest.mark.parametrize("delay", [1.0, 3.0, 6.0])
def test_ctrl_c_while_a_node_reads_its_parameter_file_is_a_clean_exit(tmp_path, delay):
    """Item 9: Ctrl-C while the dynamics node parsed its parameter files gave a traceback.
    (The file takes seconds to parse; the delays make one of the signals land in it.)"""
    long = long_params_file(tmp_path, MAX_PARAMS_NODES - 100)
    p = subprocess.Popen([str(BIN / "dynamics_node"), "--ros-args", "--params-file", str(long)],
                         env=dds_env(83), cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert p.returncode in (0, 2), (p.returncode, out)   # 2: the file's parameter x is unknown


def test_hydrodynamics_file_is_read_within_the_same_bounds(tmp_path):
    """Item 9: the hydrodynamics YAML (a model file a scenario names) was read unbounded:
    a nested file ended in RecursionError, an alias bomb in gigabytes."""
    from vm_dynamics.model.hydrodynamics import load_hydrodynamics
    nested = tmp_path / "nested_hydro.yaml"
    nested.write_text("water_density: " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(ValueError, match=rf"hydrodynamics file: {nested}: invalid YAML: nested "
                                         rf"deeper than {MAX_PARAMS_DEPTH} levels"):
        load_hydrodynamics(nested)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{k + 1}: &a{k + 1} [*a{k}, *a{k}, *a{k}, *a{k}, *a{k}, *a{k}, *a{k}, *a{k}, *a{k}]\n"
        for k in range(9)))
    with pytest.raises(ValueError, match=r"bomb.yaml: invalid YAML: aliases \('\*a0'\) are not "
                                         r"supported"):
        load_hydrodynamics(bomb)


def test_a_urdf_with_10000_links_is_refused_naming_the_file_and_the_limit(tmp_path):
    """Item 9: a 10 000-link URDF loaded for minutes, then MemoryError on a (10000, 6, 10000)
    array."""
    urdf = tmp_path / "huge.urdf"
    urdf.write_text(chain_urdf(10_000))
    rc, text = run([str(BIN / "vm-sim"), str(scenario_file(tmp_path, urdf)), "--out",
                    str(tmp_path / "o")], tmp_path)
    assert rc == 2
    assert_one_clean_error(rc, text, f"vm-sim: error: {urdf}: 10001 links; at most {MAX_LINKS} "
                           f"are supported")
    big = tmp_path / "big.urdf"
    big.write_text(chain_urdf(2).replace("</robot>", "<!--" + "x" * MAX_URDF_BYTES + "--></robot>"))
    rc, text = run([str(BIN / "vm-sim"), str(scenario_file(tmp_path, big, "big.yaml")), "--out",
                    str(tmp_path / "o")], tmp_path)
    assert_one_clean_error(rc, text, f"{big}: larger than {MAX_URDF_BYTES} bytes")


def test_model_memory_grows_with_the_square_of_the_links():
    """Item 9: the mass-matrix check built an n×n×n array (8 GB at 1 000 joints)."""
    import vm_dynamics as vm
    n = 300
    tracemalloc.start()
    try:
        model = vm.load_model(chain_urdf(n), base="SE3", gravity=(0, 0, 0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert model.n == n
    assert peak < 60e6, f"{peak / 1e6:.0f} MB for {n} joints (n³ doubles would be 216 MB)"


# =========================================================================== 11. output dirs
@pytest.mark.parametrize("target, below_too", [("/", False), ("~", False), ("/etc", True),
                                               ("/usr/share", True)])
def test_output_directory_is_never_a_system_directory(tmp_path, target, below_too):
    """Item 11: --out / and --out <link to /etc> wrote summary.json and trajectory.mcap there.
    (Checked on prepare_run, which writes nothing before its checks.)"""
    scn = load_scenario("tumbling")
    real = os.path.expanduser(target)
    link = tmp_path / "innocent"
    link.symlink_to(real)
    for out in [real, str(link)] + ([str(link / "sub")] if below_too else []):
        for force in (False, True):
            with pytest.raises(cli.UsageError, match="is a system directory or lies in one"):
                cli.prepare_run(scn, None, out, 100.0, False, False, (), force)
    assert not os.path.exists(os.path.join(real, "sub"))


def test_output_directory_rule_for_existing_directories(tmp_path, capsys):
    """Item 11: an existing directory is used if it is empty or holds an earlier run's
    output; one holding other files needs --force."""
    args = ["tumbling", "--duration", "0.02", "--no-plots", "--quiet", "--out"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(args + [str(empty)]) == 0
    assert cli.main(args + [str(empty)]) == 0                  # an earlier run's output
    assert json.loads((empty / "summary.json").read_text())["scenario"] == "tumbling"
    capsys.readouterr()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    assert cli.main(args + [str(mine)]) == 2
    err = capsys.readouterr().err
    assert f"--out: {str(mine)!r} already holds files that are not an earlier vm-sim run's " \
           f"(thesis.tex, ...)" in err and "--force" in err, err
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    assert cli.main(args + [str(mine), "--force"]) == 0
    assert (mine / "thesis.tex").read_text() == "precious" and (mine / "summary.json").is_file()
