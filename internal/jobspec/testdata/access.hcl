# vault (job, group, task), consul, identity (default and named), secret
# (job and task), volumes and volume_mount, the job-level task shorthand.
job "access" {
  vault {
    role = "job-role"
  }

  secret "db" {
    provider = "vault"
    path     = "secret/data/db"
    config {
      engine = "kv_v2"
    }
    env {
      DB_PASS = "password"
    }
  }

  group "g" {
    vault {
      cluster     = "other"
      namespace   = "ns1"
      policies    = ["read"]
      env         = false
      change_mode = "signal"
      change_signal = "SIGUSR1"
      allow_token_expiration = true
    }

    consul {
      cluster   = "default"
      namespace = "team"
      partition = "p1"
    }

    volume "data" {
      type            = "csi"
      source          = "data-vol"
      read_only       = false
      sticky          = true
      per_alloc       = true
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
    }
    volume "certs" {
      type      = "host"
      source    = "certs"
      read_only = true
    }

    task "inherits" {
      driver = "exec"
      volume_mount {
        volume           = "data"
        destination      = "/srv/data"
        read_only        = false
        propagation_mode = "private"
        selinux_label    = "Z"
      }
      identity {
        env  = true
        file = true
      }
      identity {
        name        = "vault_default"
        aud         = ["vault.io"]
        ttl         = "30m"
        change_mode = "signal"
        change_signal = "SIGHUP"
        filepath    = "secrets/vault.jwt"
        extra_claims = ["sub"]
      }
    }

    task "own" {
      driver = "exec"
      vault {
        role        = "task-role"
        disable_file = true
      }
      consul {
        namespace = "other"
      }
      secret "db" {
        provider = "custom"
        path     = "mine"
      }
      identity {
        name = "default"
        aud  = ["nomad"]
      }
    }
  }

  task "solo" {
    driver = "exec"
  }
}
