# shellcheck shell=bash
# Target adapter: the local lab (targets/local/target.json): network namespaces on
# this host. Its bring-up, repair and leftover sweep are scripts/lab's own (not
# remote); no credentials.

target_credentials() { :; }
