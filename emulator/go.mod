module p4bng/emulator

go 1.19
