# Blocks written but (nearly) empty: the parser sets what is written and
# nothing else. Defaults such as update's max_parallel 1, restart attempts,
# ephemeral disk 300 MB, log rotation 10x10 MB, cpu 100/memory 300, spread
# and affinity weight 50, service provider and check settings are
# api.Job.Canonicalize's (and the server's), not the parser's. Durations
# become nanoseconds. A port with `static` is reserved; the others are
# dynamic, `to` kept either way. Vault is the exception: the parser writes
# env true, disable_file false, change_mode restart.
job "blocks" {
  update {}
  migrate {
    min_healthy_time = "30s"
  }
  reschedule {}
  spread {
    attribute = "${node.datacenter}"
  }

  group "g" {
    restart {}
    ephemeral_disk {}
    disconnect {}
    network {
      port "dyn" {}
      port "mapped" {
        to = 8080
      }
      port "fixed" {
        static = 9090
        to     = 90
      }
    }
    network {
      mode = "bridge"
      port "only-dynamic" {}
    }
    service {
      name = "web"
      port = "dyn"
      check {
        type     = "tcp"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "t" {
      driver = "exec"
      leader = false
      logs {}
      resources {}
      vault {}
      lifecycle {
        hook = "prestart"
      }
      dispatch_payload {}
    }
  }
}
