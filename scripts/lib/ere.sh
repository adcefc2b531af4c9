# shellcheck shell=bash
# A string as an extended regular expression that matches it and nothing else. pgrep -f
# reads its pattern as one, and a checkout's path may hold '+' (pfslab/names.py): unquoted,
# a lab in /tmp/k@GA+rQ matched none of its own processes (a lab-down that missed them,
# a "nothing is left" that was not checked). Defines functions only, and nothing else,
# so that tests of several checkouts can source it without taking one's PFSLAB_ROOT.
# shellcheck disable=SC2001 # one bracket class, not a replacement per character
ere_quote() { sed 's/[][\\.*^$+?(){}|]/\\&/g' <<<"$1"; }
