"""The lab, typed: its resolved file (build/<lab>/lab.json, :mod:`pfslab.model.lab`) and
Terraform's inventory of it running (build/<lab>/inventory.json,
:mod:`pfslab.model.inventory`), each parsed once into frozen dataclasses. Keys the
lifecycle does not read are tolerated; a missing or mistyped key it reads is refused in
one line naming the file, the key and what is allowed."""

from __future__ import annotations

from pfslab.model.fields import ModelError
from pfslab.model.inventory import Inventory, Local, Node, Placement
from pfslab.model.lab import BridgeClaim, InstanceBlock, InstanceNode, Lab

__all__ = ["BridgeClaim", "InstanceBlock", "InstanceNode", "Inventory", "Lab", "Local", "ModelError", "Node", "Placement"]
