# dynamic blocks: repeated api blocks (port, group, env-less service tags)
# and nested blocks inside the opaque task config.
locals {
  ports  = { http = 8080, grpc = 9090 }
  mounts = ["/a", "/b"]
}

job "dyn" {
  dynamic "group" {
    for_each = ["blue", "green"]
    labels   = [group.value]
    content {
      count = group.key + 1
      network {
        dynamic "port" {
          for_each = local.ports
          labels   = [port.key]
          content {
            to = port.value
          }
        }
      }
      task "app" {
        driver = "docker"
        config {
          image = "app:${group.value}"
          dynamic "mount" {
            for_each = local.mounts
            iterator = m
            content {
              target = m.value
              index  = m.key
            }
          }
        }
        dynamic "template" {
          for_each = ["a.conf"]
          content {
            data        = "node=${node.unique.name}"
            destination = "local/${template.value}"
          }
        }
      }
    }
  }
}
