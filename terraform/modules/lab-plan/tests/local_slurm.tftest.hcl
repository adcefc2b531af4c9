# The local lab with Slurm (labs/local-slurm.yaml): the scheduler's roles on the login
# node and the clients, in the last phase, and its settings in their node configs only.

# The resolved labs are written by scripts/check-terraform (`pfslab lab export`).
variables {
  lab_file = "../../../build/terraform-test/local-slurm@local.json"
  target   = "local"
}

run "slurm_roles_and_settings" {
  command = plan

  assert {
    condition     = jsondecode(output.node_configs["cli0"]).node.roles == ["ceph-client", "slurm-controller", "slurm-node"] && jsondecode(output.node_configs["cli1"]).node.roles == ["ceph-client", "slurm-node"]
    error_message = "slurmctld belongs on the login node cli0, slurmd on both clients; got ${jsonencode([for n in ["cli0", "cli1"] : jsondecode(output.node_configs[n]).node.roles])}."
  }

  assert {
    condition     = jsondecode(output.node_configs["cli1"]).scheduler.type == "slurm" && jsondecode(output.node_configs["cli1"]).cluster.first["slurm-controller"] == "cli0"
    error_message = "A Slurm node's config carries the lab's scheduler and names the controller."
  }

  assert {
    condition     = !contains(keys(jsondecode(output.node_configs["mon0"])), "scheduler")
    error_message = "A node without a Slurm role gets no scheduler settings."
  }

  assert {
    condition     = jsonencode([for p in values(output.phases[4]) : p.role if startswith(p.role, "slurm-")]) == jsonencode(["slurm-controller", "slurm-node", "slurm-node"])
    error_message = "The Slurm roles start in the last phase, after the clients mount."
  }
}
