# Sourced by .ci/run (it exports variables, so it is not run as a child).
#
# The side-by-side benchmarks' tests (tests/test_bench_pipedream.py, tests/test_bench_baechi.py)
# run PipeDream's optimizer and Baechi's placers from checkouts of their GitHub repositories,
# named by PIPEDREAM_SRC and BAECHI_SRC. CI reaches PyPI, Debian and npm only, so it takes them
# from snapshots on this machine: bare git repositories at $PLANNER_SNAPSHOTS/OWNER+NAME/repo
# (default /work/.mirror, where the workplace's `fetch` puts them). Each is unpacked into a
# temporary folder that CI removes when it ends. A variable already set is kept; without it or
# a snapshot, those tests skip and say which variable is missing.

CI_SOURCES=$(mktemp -d "${TMPDIR:-/tmp}/planner-ci-sources.XXXXXX")
trap 'rm -rf "$CI_SOURCES"' EXIT

_ci_source() {  # VARIABLE OWNER+NAME
  local var=$1 name=$2
  local repo=${PLANNER_SNAPSHOTS:-/work/.mirror}/$name/repo
  if [ -n "${!var:-}" ]; then
    echo "sources: $var=${!var} (already set)"
    return 0
  fi
  if ! git --git-dir="$repo" rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
    echo "sources: no snapshot of $name at $repo; the tests that need $var will skip" >&2
    return 0
  fi
  mkdir -p "$CI_SOURCES/$name"
  if ! git --git-dir="$repo" archive HEAD | tar -x -C "$CI_SOURCES/$name"; then
    echo "sources: could not unpack $repo; the tests that need $var will skip" >&2
    return 0
  fi
  export "$var=$CI_SOURCES/$name"
  echo "sources: $var=$CI_SOURCES/$name ($name at $(git --git-dir="$repo" rev-parse --short HEAD))"
}

_ci_source PIPEDREAM_SRC msr-fiddle+pipedream
_ci_source BAECHI_SRC beomyeol+baechi
