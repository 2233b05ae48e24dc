"""Shared test setup: tests never touch the network."""

import os

# Set before tabpfn/huggingface_hub are imported by any test module: a hub lookup must
# fail at once instead of hanging on the closed network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TABPFN_DISABLE_TELEMETRY", "1")
