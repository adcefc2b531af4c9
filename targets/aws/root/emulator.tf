# The kit's cloud tests provision against an EC2 API emulator on this machine
# (scripts/cloud-emulator) instead of AWS; scripts/lab passes its URL from
# PFSLAB_AWS_ENDPOINT. Null, the default, is AWS itself.

variable "aws_endpoint" {
  description = "URL of an EC2 API emulator (EC2 and STS) to apply the lab to instead of AWS, e.g. http://127.0.0.1:41901; null means AWS."
  type        = string
  default     = null

  validation {
    condition     = var.aws_endpoint == null || can(regex("^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$", coalesce(var.aws_endpoint, "x")))
    error_message = "The aws_endpoint must be an http(s) URL of a host and port only, such as http://127.0.0.1:41901."
  }
}
