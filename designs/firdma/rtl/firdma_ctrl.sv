// firdma job control: START checks, BUSY, stop on ABORT or a response error, draining of the
// bursts already issued, DONE/ERROR/ABORTED events and the CYCLES counter.
`default_nettype none
module firdma_ctrl #(
    parameter int DATA_W = 32
) (
    input  wire        clk,
    input  wire        rst_n,
    input  wire        start_req,
    input  wire        abort_req,
    input  wire [31:0] src_addr,
    input  wire [31:0] dst_addr,
    input  wire [15:0] len,
    input  wire        rd_err,
    input  wire        wr_err,
    input  wire        rd_idle,
    input  wire        wr_idle,
    input  wire        wr_done,
    output wire        busy,
    output wire        job_start,
    output wire        stop,
    output logic       set_done,     // status events, in the cycle BUSY falls
    output logic       set_error,
    output logic [3:0] set_err_code,
    output logic       set_aborted,
    output reg  [31:0] cycles
);
    localparam int BYTES = DATA_W / 8;
    localparam logic [3:0] ERR_ALIGN = 4'd1, ERR_READ = 4'd2, ERR_WRITE = 4'd3;
    localparam logic [1:0] S_IDLE = 2'd0, S_RUN = 2'd1, S_STOP = 2'd2;

    reg [1:0] state;
    reg [3:0] stop_code;   // 0: aborted, else the error code

    wire misaligned = ((src_addr | dst_addr) & 32'(BYTES - 1)) != 32'd0;
    assign job_start = (state == S_IDLE) & start_req & ~misaligned & (len != 16'd0);
    assign busy = (state != S_IDLE);
    assign stop = (state == S_STOP);

    wire drained = rd_idle & wr_idle;

    always_comb begin
        set_done     = 1'b0;
        set_error    = 1'b0;
        set_err_code = 4'd0;
        set_aborted  = 1'b0;
        case (state)
            S_IDLE: if (start_req) begin
                set_error    = misaligned;
                set_err_code = misaligned ? ERR_ALIGN : 4'd0;
                set_done     = ~misaligned & (len == 16'd0);
            end
            S_RUN: set_done = wr_done & ~rd_err & ~wr_err;
            default: if (drained) begin
                set_aborted  = (stop_code == 4'd0);
                set_error    = (stop_code != 4'd0);
                set_err_code = stop_code;
            end
        endcase
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            state     <= S_IDLE;
            stop_code <= 4'd0;
            cycles    <= 32'd0;
        end else begin
            if (busy) cycles <= cycles + 32'd1;
            case (state)
                S_IDLE: if (start_req) begin
                    cycles <= 32'd0;
                    if (job_start) state <= S_RUN;
                end
                S_RUN: begin
                    if (rd_err || wr_err) begin
                        stop_code <= rd_err ? ERR_READ : ERR_WRITE;
                        state     <= S_STOP;
                    end else if (wr_done) begin
                        state <= S_IDLE;
                    end else if (abort_req) begin
                        stop_code <= 4'd0;
                        state     <= S_STOP;
                    end
                end
                default: if (drained) state <= S_IDLE;
            endcase
        end
    end
endmodule
`default_nettype wire
