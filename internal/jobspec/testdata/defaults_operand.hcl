# A constraint or affinity without an operator means equality: the parser
# writes "=" at every level (job, group, task, device), as Nomad's does, and
# leaves the affinity weight for api.Job.Canonicalize (50).
job "operand" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    attribute = "${attr.arch}"
    operator  = ""
    value     = "amd64"
  }
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
  }

  group "g" {
    constraint {
      attribute = "${meta.rack}"
      value     = "r1"
    }
    affinity {
      attribute = "${meta.zone}"
      value     = "a"
      weight    = -10
    }

    task "t" {
      driver = "exec"
      constraint {
        attribute = "${driver.exec}"
        value     = "1"
      }
      affinity {
        attribute = "${attr.cpu.arch}"
        operator  = "!="
        value     = "arm64"
      }
      resources {
        device "gpu" {
          constraint {
            attribute = "${device.vendor}"
            value     = "nvidia"
          }
          affinity {
            attribute = "${device.model}"
            value     = "A100"
          }
        }
      }
    }
  }
}
