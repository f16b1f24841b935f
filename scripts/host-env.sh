# Sourced (not run) by test.sh, test-long.sh and demo.sh from the repository root: set up
# the host without starting daemons (scripts/setup-host.sh), then put the project's venv
# first on PATH and sbin last (mkfs, sfdisk, nft and libvirtd live there).
scripts/setup-host.sh --no-daemons
export PATH="$PWD/.venv/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin"
