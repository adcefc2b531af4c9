"""Names of a cloud lab's account-wide resources (pfslab/names.py cloud_name): valid
for each cloud that takes them, for any lab name and owner the kit accepts, and
different for two owners of one lab (they share an account). Many random labs and
owners, drawn from the schema's and OWNER's own patterns with fixed seeds."""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import pytest

from pfslab import KIT_ROOT, instance, labs, names

#: The lab name pattern of labs/schema.json: what `make lab-up LAB=` can be.
LAB_PATTERN = json.loads((KIT_ROOT / "labs" / "schema.json").read_text())["properties"]["name"]["pattern"]
OWNER_CHARS = string.ascii_letters + string.digits + "_.:/=+@ -"


def aws_key_pair_ok(name: str) -> bool:
    """EC2 CreateKeyPair: up to 255 ASCII characters."""
    return 1 <= len(name) <= 255 and name.isascii() and name.isprintable()


def aws_placement_group_ok(name: str) -> bool:
    """EC2 CreatePlacementGroup: up to 255 ASCII characters."""
    return 1 <= len(name) <= 255 and name.isascii() and name.isprintable()


def aws_security_group_ok(name: str) -> bool:
    """EC2 CreateSecurityGroup in a VPC: up to 255 of a-z A-Z 0-9, spaces and
    ._-:/()#,@[]+=&;{}!$*, not starting with sg-."""
    return bool(re.fullmatch(r"[A-Za-z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{1,255}", name)) and not name.lower().startswith("sg-")


def azure_resource_group_ok(name: str) -> bool:
    """Azure resource groups: 1-90 alphanumerics, underscores, parentheses, hyphens and
    periods, not ending in a period."""
    return bool(re.fullmatch(r"[A-Za-z0-9_()\-.]{1,90}", name)) and not name.endswith(".")


def tf_validation(path: str, variable: str) -> re.Pattern[str]:
    """The regex of a Terraform variable's validation: the kit's own check before apply."""
    text = (KIT_ROOT / path).read_text()
    block = text[text.index(f'variable "{variable}"'):]
    found = re.search(r'regex\("((?:[^"\\]|\\.)*)", var\.' + variable, block)
    assert found, f"no regex validation of {variable} in {path}"
    return re.compile(found.group(1).encode().decode("unicode_escape"))


def random_lab(rng: random.Random) -> str:
    first = rng.choice(string.ascii_lowercase)
    return first + "".join(rng.choice(string.ascii_lowercase + string.digits + ".+-") for _ in range(rng.randint(0, 39)))


def random_owner(rng: random.Random) -> str:
    return "".join(rng.choice(OWNER_CHARS) for _ in range(rng.randint(1, 128)))


def test_the_random_inputs_are_what_the_kit_accepts() -> None:
    rng = random.Random(25)
    for _ in range(500):
        assert re.fullmatch(LAB_PATTERN, random_lab(rng))
        owner = random_owner(rng)
        assert instance.owner(None, {"OWNER": owner}) == owner


@pytest.mark.parametrize("seed", range(4))
def test_every_name_is_valid_for_every_cloud_and_the_kits_own_checks(seed: int) -> None:
    rng = random.Random(seed)
    aws_check = tf_validation("targets/aws/module/variables.tf", "resource_name")
    azure_check = tf_validation("targets/azure/module/variables.tf", "resource_group")
    for _ in range(2000):
        lab, owner = random_lab(rng), random_owner(rng)
        name = names.cloud_name(lab, owner)
        assert aws_key_pair_ok(name) and aws_placement_group_ok(name) and aws_security_group_ok(name), (lab, owner, name)
        assert azure_resource_group_ok(name), (lab, owner, name)
        assert aws_check.fullmatch(name) and azure_check.fullmatch(name), (lab, owner, name)
        # Still legible: the lab it belongs to stands in it.
        assert name.startswith(f"pfslab-{lab.replace('+', '-')}-")


@pytest.mark.parametrize("seed", range(4))
def test_distinct_owners_of_one_lab_never_share_a_name(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(50):
        lab = random_lab(rng)
        owners = {random_owner(rng) for _ in range(200)}
        # Owners a human tells apart by little: case, a space, a trailing character.
        owners |= {"bob", "Bob", "bob ", "bob.", "bob@example.org", "team/a", "team a"}
        made = {names.cloud_name(lab, o) for o in owners}
        assert len(made) == len(owners), lab


def test_labs_whose_names_differ_only_by_plus_do_not_share_a_name() -> None:
    """Azure's '+' becomes '-': beegfs-small+1 and beegfs-small-1 must still differ."""
    assert names.cloud_name("beegfs-small+1", "ann") != names.cloud_name("beegfs-small-1", "ann")


def test_the_name_is_stable_and_recorded_in_the_instance_block() -> None:
    """Derived once at lab-up into the resolved lab; Terraform reads it from there."""
    block = instance.describe("aws-cephfs", "ann", Path("/home/ann/pfslab"))
    assert block["cloud_name"] == names.cloud_name("aws-cephfs", "ann")
    assert re.fullmatch(r"pfslab-aws-cephfs-[0-9a-f]{8}", block["cloud_name"])
    lab = instance.with_instance(labs.load("aws-cephfs"), {"USER": "bob"})
    assert lab["instance"]["cloud_name"] == names.cloud_name("aws-cephfs", "bob") != block["cloud_name"]


@pytest.mark.parametrize("owner", ["bob\n", "bob\r\n", "\nbob", "bo\nb"])
def test_an_owner_with_a_newline_is_refused_in_one_line(owner: str) -> None:
    """A trailing newline (OWNER=$(...) of a file) would pass a '$' and then tag the
    lab with an owner its sweep never matches."""
    with pytest.raises(instance.InstanceError) as err:
        instance.owner(None, {"OWNER": owner})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"owner {owner!r} is not allowed; give OWNER= 1-128 letters")
