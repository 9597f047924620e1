# task attributes and its blocks: resources (numa), logs, template (wait,
# change_script), artifact (options, headers), lifecycle, dispatch_payload,
# kill settings, action, schedule, csi_plugin, scaling.
job "task" {
  type = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["customer"]
    meta_optional = ["priority"]
  }

  group "g" {
    scaling {
      enabled = true
      min     = 1
      max     = 10
      policy {
        cooldown = "1m"
        check "cpu" {
          source = "prometheus"
          query  = "avg(cpu)"
          strategy "target-value" {
            target = 70
          }
        }
      }
    }

    task "main" {
      driver       = "exec"
      user         = "nobody"
      leader       = true
      kind         = "connect-proxy:api"
      kill_timeout = "45s"
      kill_signal  = "SIGINT"
      shutdown_delay = "3s"

      config {
        command = "/bin/work"
      }

      resources {
        cpu        = 0
        cores      = 2
        memory     = 512
        memory_max = 1024
        secrets    = 16
        numa {
          affinity = "require"
          devices  = ["nvidia/gpu"]
        }
      }

      logs {
        max_files     = 5
        max_file_size = 20
        disabled      = false
      }

      template {
        source          = "local/in.tpl"
        destination     = "secrets/out.env"
        change_mode     = "script"
        splay           = "0s"
        perms           = "0600"
        uid             = 1000
        gid             = 1000
        left_delimiter  = "[["
        right_delimiter = "]]"
        env             = true
        once            = false
        error_on_missing_key = true
        change_script {
          command       = "/bin/reload"
          args          = ["-f"]
          timeout       = "10s"
          fail_on_error = true
        }
        wait {
          min = "2s"
          max = "10s"
        }
      }
      template {
        data          = "x"
        destination   = "local/x"
        change_mode   = "signal"
        change_signal = "SIGHUP"
      }

      artifact {
        source      = "https://example.com/app.tar.gz"
        destination = "local/app"
        mode        = "any"
        chown       = true
        insecure    = false
        options {
          checksum = "sha256:abc"
        }
        headers {
          User-Agent = "drover"
        }
      }

      dispatch_payload {
        file = "input.json"
      }

      action "dump" {
        command = "/bin/dump"
        args    = ["--all"]
      }

      schedule {
        cron {
          start    = "0 9 * * 1-5"
          end      = "0 17"
          timezone = "UTC"
        }
      }

      scaling "mem" {
        enabled = false
        min     = 128
        max     = 2048
        policy {
          strategy = "app-sizing-percentile"
        }
      }
    }

    task "init" {
      driver = "exec"
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
    }

    task "plugin" {
      driver = "docker"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
      csi_plugin {
        id                     = "ebs"
        type                   = "monolith"
        mount_dir              = "/csi"
        stage_publish_base_dir = "/local/csi"
        health_timeout         = "1m"
      }
    }
  }
}
