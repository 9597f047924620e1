# The template defaults Nomad's parser writes: change_mode restart, perms
# 0644, splay 5s, error_on_missing_key false, and for a change_script no
# args, a 5s timeout and fail_on_error false. Everything else (the change
# signal, delimiters, env, once, uid/gid, wait) stays unset for
# api.Template.Canonicalize.
job "tpl" {
  group "g" {
    task "t" {
      driver = "exec"
      template {
        data        = "x"
        destination = "local/x"
      }
      template {
        data                 = "y"
        destination          = "local/y"
        change_mode          = "script"
        error_on_missing_key = true
        change_script {
          command = "/bin/reload"
        }
      }
    }
  }
}
