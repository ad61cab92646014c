"""Where things are: the runtime library, the shim, the tools and the plan directories.

The plan-directory rule is the runtime's (docs/plan-core.md, "Registry and selection"), with the
same constants Meson writes for both; tests/python/integration/test_plan_dirs.py checks they agree.
An installed package knows its files from its ``_install_paths`` module; a source checkout finds
them through ``MSCCLPP_LIBRARY`` and ``MSCCLPP_BUILD_DIR``.
"""
import ctypes
import ctypes.util
import importlib.util
import os
import pwd

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def installed():
    """The _install_paths module of this installation, or None (a source checkout)."""
    try:
        from . import _install_paths
    except ImportError:
        return None
    return _install_paths


def _package_relative(path):
    return os.path.normpath(os.path.join(PACKAGE_DIR, path))


def build_dir():
    """$MSCCLPP_BUILD_DIR (a build folder of a source checkout), absolute, or None."""
    build = os.environ.get("MSCCLPP_BUILD_DIR")
    return os.path.abspath(build) if build else None


def _build_paths():
    """The _install_paths module Meson wrote into $MSCCLPP_BUILD_DIR (its constants), or None."""
    build = build_dir()
    path = os.path.join(build, "dsl_compiler", "_install_paths.py") if build else None
    if path and os.path.isfile(path):
        return _load_module(path, "mscclpp._build_install_paths")
    return None


def library_candidates():
    """(description, path) of each libmscclpp to try, in order: $MSCCLPP_LIBRARY, this installation's
    library, the one in $MSCCLPP_BUILD_DIR."""
    found = []
    if os.environ.get("MSCCLPP_LIBRARY"):
        found.append(("MSCCLPP_LIBRARY", os.environ["MSCCLPP_LIBRARY"]))
    paths = installed()
    if paths is not None:
        found.append(("the installed library", _package_relative(paths.LIBRARY)))
    if build_dir():
        found.append(("MSCCLPP_BUILD_DIR", os.path.join(build_dir(), "libmscclpp.so")))
    return found


def _installed_or_built(attribute, in_build):
    """This installation's file named by _install_paths.<attribute>, else the one at in_build inside
    $MSCCLPP_BUILD_DIR, else None."""
    paths = installed()
    if paths is not None:
        return _package_relative(getattr(paths, attribute))
    return os.path.join(build_dir(), in_build) if build_dir() else None


def shim_path():
    """The NCCL shim to LD_PRELOAD, or None when this is not an installation and no build is named."""
    return _installed_or_built("SHIM", os.path.join("nccl_shim", "libmscclpp_nccl.so"))


def nccl_replace_dir():
    """The folder holding the shim as libnccl.so.2 (replace mode: first on LD_LIBRARY_PATH), or None."""
    return _installed_or_built("NCCL_REPLACE_DIR", "nccl_shim")


def tools_dir():
    """The folder of this installation's C++ tools, or None."""
    return _installed_or_built("TOOLS_DIR", "tools")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def library_file(lib, symbol="mscclppPlanApiVersion"):
    """The file a loaded library came from, as the dynamic loader names it (what the runtime's own
    dladdr sees), or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        address = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p)
    except (OSError, AttributeError):
        return None
    info = _DlInfo()
    if libc.dladdr(address, ctypes.byref(info)) == 0 or not info.dli_fname:
        return None
    return os.path.abspath(os.fsdecode(info.dli_fname))


def plans_from_libdir(library=None):
    """PLANS_FROM_LIBDIR of this installation (else of $MSCCLPP_BUILD_DIR), or None; for the shim's replace-mode
    copy (a library file named libnccl.so*), PLANS_FROM_NCCL_DIR, as the runtime in it computes it."""
    replace_copy = library is not None and os.path.basename(library).startswith("libnccl.so")
    for paths in (installed(), _build_paths()):
        if paths is not None:
            return paths.PLANS_FROM_NCCL_DIR if replace_copy else paths.PLANS_FROM_LIBDIR
    return None


def home_dir():
    """The passwd entry's home directory, as the runtime reads it."""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def cache_dir():
    """$MSCCLPP_CACHE_DIR, else ~/.cache/mscclpp (the jit cache and the user's plan cache live here)."""
    if os.environ.get("MSCCLPP_CACHE_DIR"):
        return os.environ["MSCCLPP_CACHE_DIR"]
    home = home_dir()
    return os.path.join(home, ".cache", "mscclpp") if home else None


def user_plan_cache():
    cache = cache_dir()
    return os.path.join(cache, "plans") if cache else None


def split_directories(text):
    return [d for d in (text or "").split(":") if d]


def _paths_module():
    """This installation's _install_paths module, else the one in $MSCCLPP_BUILD_DIR, or None."""
    paths = installed()
    return paths if paths is not None else _build_paths()


def installed_plan_dir(library=None):
    """The default plans installed with the runtime library (the one loaded in this process when
    there is one, else the first candidate), or None when unknown. A library in its build folder
    uses the source tree's plans, as the runtime does."""
    if library is None:
        library = runtime_library_file()
    relative = plans_from_libdir(library)
    if relative is None or library is None:
        return None
    paths = _paths_module()
    build_root = getattr(paths, "BUILD_ROOT", None)
    if build_root and os.path.abspath(library).startswith(build_root + os.sep):
        return paths.SOURCE_PLAN_DIR
    return os.path.normpath(os.path.join(os.path.dirname(library), relative))


def is_default_plan_dir(directory):
    """Whether directory holds the installed default plans (the runtime's rule: their plans rank
    after the user's)."""
    paths = _paths_module()
    for defaults in (installed_plan_dir(), getattr(paths, "SOURCE_PLAN_DIR", None)):
        try:
            if defaults and os.path.samefile(directory, defaults):
                return True
        except OSError:
            pass
    return False


def runtime_library_file():
    """The runtime library this process uses or would load."""
    from . import _runtime_lib

    try:
        return library_file(_runtime_lib.load())
    except _runtime_lib.RuntimeNotLoaded:
        candidates = library_candidates()
        return candidates[0][1] if candidates else None


def plan_directories():
    """Where the runtime's registry looks for plans, in the runtime's order."""
    explicit = split_directories(os.environ.get("MSCCLPP_PLAN_DIR"))
    if explicit:
        return explicit
    return [d for d in (installed_plan_dir(), user_plan_cache()) if d]


def default_install_dir():
    """Where ``--install`` writes: the first $MSCCLPP_PLAN_DIR entry, else the user's plan cache."""
    explicit = split_directories(os.environ.get("MSCCLPP_PLAN_DIR"))
    return explicit[0] if explicit else user_plan_cache()
