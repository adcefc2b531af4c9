output "netns" {
  description = "Network namespace of each node."
  value       = local.netns
}

output "gateway" {
  description = "The host's address on the lab bridge (where mpirun and the IOzone master listen)."
  value       = local.gateway
}

output "started" {
  description = "Every \"node/role\" the lab started, in phase order."
  value       = concat(module.phase0.started, module.phase1.started, module.phase2.started, module.phase3.started, module.phase4.started)
}
