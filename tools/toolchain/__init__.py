"""The local cluster's toolchain: built by build.sh from the versions in versions.env."""
