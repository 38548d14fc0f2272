module ratewarden.example/login

go 1.19
