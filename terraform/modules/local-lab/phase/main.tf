# One start phase of the local lab: each "node/role" runs its role's `up` inside
# the node's namespace, after taking its share of the bootstrap node's cluster files
# (scripts/local/cluster-files); destroy runs `stop`. The parent orders phases with
# depends_on, so destroy stops them in reverse (clients first, monitors last).

variable "calls" {
  description = "\"node/role\" => what the provisioners need: kit, netns, config, script (kit-relative), component, digest, cluster_source (the bootstrap node's paths.cluster)."
  type = map(object({
    kit            = string
    netns          = string
    config         = string
    script         = string
    component      = string
    digest         = string
    cluster_source = string
  }))
}

resource "terraform_data" "role" {
  for_each         = var.calls
  input            = each.value
  triggers_replace = [each.value.digest]

  provisioner "local-exec" {
    command = "'${self.input.kit}/scripts/local/cluster-files' '${self.input.cluster_source}' '${self.input.config}' && '${self.input.kit}/scripts/local/node-exec' '${self.input.netns}' '${self.input.config}' '${self.input.kit}/${self.input.script}' up '${self.input.component}'"
  }

  provisioner "local-exec" {
    when    = destroy
    command = "'${self.input.kit}/scripts/local/node-exec' '${self.input.netns}' '${self.input.config}' '${self.input.kit}/${self.input.script}' stop '${self.input.component}' || true"
  }
}

output "started" {
  description = "The \"node/role\" keys this phase started."
  value       = keys(terraform_data.role)
}
