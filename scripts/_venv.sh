# Shared by scripts/test and scripts/demo: find Python 3.12+, keep .venv current.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# PGCATALOG_PLONE=6.1 installs the Plone 6.1 set (constraints-6.1.txt) into
# .venv-6.1; the default is Plone 6.2 (constraints.txt) in .venv.
if [ "${PGCATALOG_PLONE:-6.2}" = "6.1" ]; then
    VENV="$ROOT/.venv-6.1"
    CONSTRAINTS="$ROOT/constraints-6.1.txt"
else
    VENV="$ROOT/.venv"
    CONSTRAINTS="$ROOT/constraints.txt"
fi

python_ok() {
    # 3.12+, but not CPython 3.13.0: its read-only Pickler.persistent_id
    # breaks CMFEditions (fixed in 3.13.1).
    "$1" -c 'import sys; v = sys.version_info[:3]; sys.exit(v < (3, 12) or v == (3, 13, 0))' >/dev/null 2>&1
}

find_python() {
    local cand
    for cand in "${PYTHON:-}" python3.12 python3.13 python3 python; do
        [ -n "$cand" ] || continue
        if command -v "$cand" >/dev/null 2>&1 && python_ok "$cand"; then
            command -v "$cand"
            return 0
        fi
    done
    # Interpreters installed by pyenv or uv but not on PATH
    local root
    for root in "$(pyenv root 2>/dev/null || true)/versions" "$HOME/.pyenv/versions" \
        "$HOME/.local/share/uv/python"; do
        [ -d "$root" ] || continue
        for cand in $(ls -d "$root"/*/bin/python3 2>/dev/null | sort -rV); do
            if python_ok "$cand"; then
                echo "$cand"
                return 0
            fi
        done
    done
    echo "error: Python 3.12 or newer is needed (set PYTHON=/path/to/python3.12)" >&2
    return 1
}

ensure_venv() {
    local extras="$1" lock=
    # runs side by side (CI's two Plone versions) share the editable
    # install's egg-info: one installs at a time
    if command -v flock >/dev/null 2>&1; then
        exec {lock}>"$ROOT/.venv.lock"
        flock "$lock"
    fi
    local stamp="$VENV/.pgcatalog-$extras"
    local want
    want="$(cat "$ROOT/setup.py" "$CONSTRAINTS" | sha256sum | cut -d' ' -f1)"
    if [ ! -x "$VENV/bin/python" ] || ! python_ok "$VENV/bin/python"; then
        rm -rf "$VENV"
        "$(find_python)" -m venv "$VENV"
    fi
    if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
        echo "Installing plone.pgcatalog[$extras] into $(basename "$VENV") ..." >&2
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check -U pip >&2
        # setuptools explicitly: Plone 6.1's packages import pkg_resources
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
            -c "$CONSTRAINTS" -e "$ROOT[$extras]" setuptools >&2
        echo "$want" > "$stamp"
    fi
    if [ -n "${lock:-}" ]; then
        exec {lock}>&-
    fi
}
