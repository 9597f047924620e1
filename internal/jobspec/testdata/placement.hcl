# constraint (every operator form and the shorthands), affinity and spread at
# job, group, task and device level.
job "placement" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    attribute = "${attr.cpu.numcores}"
    operator  = ">="
    value     = "4"
  }
  constraint {
    distinct_hosts = true
  }
  constraint {
    distinct_property = "${meta.rack}"
    value             = "2"
  }
  constraint {
    attribute = "${attr.os.version}"
    version   = ">= 22.04"
  }
  constraint {
    attribute = "${attr.nomad.version}"
    semver    = ">= 1.6.0"
  }
  constraint {
    attribute = "${node.unique.name}"
    regexp    = "^web-[0-9]+$"
  }
  constraint {
    attribute    = "${meta.tags}"
    set_contains = "ssd,fast"
  }
  constraint {
    attribute = "${meta.optional}"
    operator  = "is_set"
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = 75
  }
  affinity {
    attribute        = "${meta.zones}"
    set_contains_any = "a,b"
    weight           = -20
  }

  spread {
    attribute = "${node.datacenter}"
    weight    = 100
    target "dc1" {
      percent = 70
    }
    target "dc2" {
      percent = 30
    }
  }

  group "g" {
    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }
    affinity {
      attribute = "${meta.rack}"
      regexp    = "r[12]"
    }
    spread {
      attribute = "${meta.rack}"
    }

    task "t" {
      driver = "exec"
      constraint {
        attribute = "${driver.exec}"
        operator  = "is_not_set"
      }
      affinity {
        attribute = "${attr.arch}"
        operator  = "!="
        value     = "arm64"
        weight    = 0
      }
      resources {
        device "nvidia/gpu" {
          count = 2
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "2 GiB"
          }
          affinity {
            attribute = "${device.model}"
            value     = "Tesla K80"
            weight    = 50
          }
        }
      }
    }
  }
}
