variable "image" {
  type        = string
  description = "container image"
  default     = "redis:7"
}

variable "count" {
  type    = number
  default = 1
  validation {
    condition     = var.count > 0 && var.count < 10
    error_message = "count must be between 1 and 9"
  }
}

variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}

variable "region" {
  type = string
}

variables {
  owner = "team-a"
}

locals {
  name      = "${upper(var.owner)}-cache"
  ports     = concat(["db"], ["metrics"])
  labels    = merge({ env = "prod" }, { owner = var.owner })
  full_name = format("%s-%s", local.name, var.region)
}

job "cache" {
  name        = local.full_name
  datacenters = var.dcs
  region      = var.region

  meta {
    labels  = jsonencode(local.labels)
    joined  = join(",", local.ports)
    nports  = length(local.ports)
    trimmed = trimspace("  x  ")
    repl    = replace("a-b-c", "-", "_")
    regex   = regex_replace("v1.2.3", "[.]", "_")
    sum     = sha256("drover")
    b64     = base64encode("drover")
    mx      = max(3, 7, 5)
    lk      = lookup(local.labels, "env", "none")
    first   = element(split(",", "a,b,c"), 1)
    has     = contains(["a", "b"], "b")
    lower   = lower("ABC")
    ks      = join(",", keys(local.labels))
  }

  group "cache" {
    count = var.count
    task "redis" {
      driver = "docker"
      config {
        image = var.image
        ports = local.ports
      }
    }
  }
}
