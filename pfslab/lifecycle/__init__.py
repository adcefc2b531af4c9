"""The lab's life where the kit runs: bringing a run to the lab and back."""
